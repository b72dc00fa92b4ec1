-- per-kernel table of the measurements taken with --metrics: each variant's kernel sum (its variant hash tells before
-- from after where a list measured both, e.g. fb-infer.txt), then per kernel time, DRAM bytes, % of the copy ceiling, L2 hit rate
with mm as (select m.id, v.model, v.task, d.name as dataset, v.hash, m.median_ms from measurements m
            join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id
            where exists (select 1 from metrics x where x.measurement_id = m.id and x.name = 'dram__bytes_read.sum')),
ceil as (select measurement_id, value as bps from metrics where name = 'ceil_copy_Bps' and kernel = '')
select mm.model, mm.task, mm.dataset, mm.hash as variant, printf('%.4f', mm.median_ms) as total_ms, k.kernel,
       printf('%.3f', k.median_ns / 1e6) as ms, printf('%.3f', (r.value + w.value) / 1e9) as dram_gb,
       printf('%.0f%%', 100 * (r.value + w.value) / (k.median_ns * 1e-9) / c.bps) as pct_copy_bw,
       printf('%.0f%%', h.value) as l2_hit
from mm join kernel_times k on k.measurement_id = mm.id
join metrics r on r.measurement_id = mm.id and r.kernel = k.kernel and r.name = 'dram__bytes_read.sum'
join metrics w on w.measurement_id = mm.id and w.kernel = k.kernel and w.name = 'dram__bytes_write.sum'
join metrics h on h.measurement_id = mm.id and h.kernel = k.kernel and h.name = 'lts__t_sector_hit_rate.pct'
left join ceil c on c.measurement_id = mm.id
order by mm.dataset, mm.model, mm.task, mm.median_ms desc, k.median_ns desc;
