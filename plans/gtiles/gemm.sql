-- Session 23 (issue 18): the GEMM kernels' medians against gtiles, each problem's gtiles sweep (plans/gtiles).
-- Usage: sqlite3 -header -column results/h200/session23.db < plans/gtiles/gemm.sql
select v.model, v.task, d.name as dataset, coalesce(json_extract(v.config, '$.lanes'), 32) as lanes,
       coalesce(json_extract(v.config, '$.gtiles'), 1) as gtiles, printf('%.4f', m.median_ms) as "layer ms",
       group_concat(k.kernel || ' ' || printf('%.4f', k.median_ns / 1e6), ', ') as "GEMM kernels ms"
from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id
     join kernel_times k on k.measurement_id = m.id
where m.status = 'ok' and k.category = 'gemm' and m.run_id in (select id from runs where command_line like '%plans/gtiles/%')
group by m.id
order by v.model, v.task, d.name, lanes, gtiles;
