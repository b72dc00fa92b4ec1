-- Session 24 (issue 18): farith=f64 against f32 on each problem's best with acc=reg32 (plans/farith). Usage:
--   sqlite3 -header -column results/h200/session24.db < plans/farith/ab.sql
.read plans/layer.sql
select v.model, v.task, d.name as dataset, coalesce(json_extract(v.config, '$.crsum'), 'atomic') as crsum,
       coalesce(json_extract(v.config, '$.farith'), 'f64') as farith,
       printf('%.4f', m.median_ms) as "kernel sum ms",
       printf('%.4f', l.span_ms) as "span ms", printf('%.2f', l.span_ms / l.gather_floor_ms) as "span / gather floor",
       substr(m.evidence, 1, 70) as evidence
from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id
     join layer l on l.measurement_id = m.id
where m.run_id in (select id from runs where command_line like '%plans/farith/%')
order by v.model, v.task, d.name, crsum, farith;
