-- Session 24 (issue 18): lanes and vec around each acc=reg32 best (plans/reg32/sweep.txt, sweep2.txt). Usage:
--   sqlite3 -header -column results/h200/session24.db < plans/reg32/sweep.sql
.read plans/layer.sql
select v.model, v.task, d.name as dataset, coalesce(json_extract(v.config, '$.lanes'), 32) as lanes,
       coalesce(json_extract(v.config, '$.vec'), 1) as vec,
       case when json_extract(v.config, '$.lb') then 'on' else 'off' end as lb, m.status, printf('%.4f', m.median_ms) as "kernel sum ms",
       printf('%.4f', l.span_ms) as "span ms", printf('%.2f', l.span_ms / l.gather_floor_ms) as "span / gather floor",
       substr(m.evidence, 1, 60) as evidence
from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id
     join layer l on l.measurement_id = m.id
where m.run_id in (select id from runs where command_line like '%plans/reg32/%-sweep.space%')
order by v.model, v.task, d.name, m.median_ms is null, m.median_ms;
