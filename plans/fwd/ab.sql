-- Session 26 (issue 18): the A/B rows of plans/fwd, one per variant, dataset and tree (commit label), in the
-- order of the calls. Usage:
--   sqlite3 -header -column results/h200/session26.db < plans/fwd/ab.sql
.read plans/layer.sql
with loss(model, fwd, bwd) as (values ('rgcn', 'other_4', 'other_6_bwd'), ('rgat', 'other_6', 'other_8_bwd'),
                                      ('hgt', 'other_8', 'other_10_bwd'))
select v.model, v.task, d.name as dataset, m.git_commit as tree,
       (select group_concat(key || '=' || case value when 1 then 'on' when 0 then 'off' else value end, ',')
        from json_each(v.config) where key in ('softmax', 'pfetch', 'vec', 'trav_10_bwd.pfetch', 'trav_10_bwd.vec',
                                               'trav_12_bwd.pfetch', 'trav_12_bwd.lanes', 'trav_12_bwd.vec',
                                               'trav_3.lanes', 'trav_3.vec')) as "varied keys",
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
