-- Session 23 (issue 18): vec against each problem's best after the vector flush (plans/vflush sweep), with span
-- and gather floor. Usage: sqlite3 -header -column results/h200/session23.db < plans/vflush/sweep.sql
.read plans/layer.sql
select v.model, v.task, d.name as dataset, coalesce(json_extract(v.config, '$.lanes'), 32) as lanes,
       coalesce(json_extract(v.config, '$.vec'), 1) as vec, coalesce(json_extract(v.config, '$.nchunk'), 64) as nchunk,
       coalesce(json_extract(v.config, '$.unroll'), 'auto') as unroll, printf('%.4f', m.median_ms) as "kernel sum ms",
       printf('%.4f', l.span_ms) as "span ms", printf('%.4f', l.gather_floor_ms) as "gather floor ms"
from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id
     join layer l on l.measurement_id = m.id
where m.status = 'ok' and m.run_id in (select id from runs where command_line like '%plans/vflush/%'
                                       and command_line not like '%plans/vflush/ab-%')
order by v.model, v.task, d.name, lanes, vec, nchunk, unroll;
