-- Session 26 (issue 18): the A/B rows of plans/fwd, one per variant, dataset and tree (commit label), in the
-- order of the calls. Usage:
--   sqlite3 -header -column results/h200/session26.db < plans/fwd/ab.sql
.read plans/layer.sql
with loss(model, fwd, bwd) as (values ('rgcn', 'other_4', 'other_6_bwd'), ('rgat', 'other_6', 'other_8_bwd'),
                                      ('hgt', 'other_8', 'other_10_bwd'))
select v.model, v.task, d.name as dataset, m.git_commit as tree,
       case when v.model = 'rgat' then coalesce(json_extract(v.config, '$."trav_10_bwd.pfetch"'),
                                                json_extract(v.config, '$.pfetch'), 0)
            when v.model = 'hgt' then coalesce(json_extract(v.config, '$."trav_12_bwd.pfetch"'), 0) end as "walk pfetch",
       m.status, case when m.status = 'ok' then printf('%.4f', m.median_ms) end as ms,
       (select printf('%.4f', k.median_ns / 1e6) from kernel_times k where k.measurement_id = m.id
        and k.kernel = case v.model when 'rgat' then 'trav_10_bwd' when 'hgt' then 'trav_12_bwd' end) as "walk ms",
       (select printf('%.4f', k.median_ns / 1e6) from kernel_times k where k.measurement_id = m.id and k.kernel = s.fwd)
           as "loss ms",
       (select printf('%.4f', k.median_ns / 1e6) from kernel_times k where k.measurement_id = m.id and k.kernel = s.bwd)
           as "loss grad ms",
       case when m.status = 'ok' then printf('%.1f', l.span_ms / l.gather_floor_ms) end as "span / gather floor"
from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id
     join loss s on s.model = v.model left join layer l on l.measurement_id = m.id
order by m.run_id;
