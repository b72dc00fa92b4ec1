-- Session 27 (issue 18): the kernels of the RGAT training best after wacc=reg with CUPTI counters (plans/rowpf/metrics.txt). Usage:
--   sqlite3 -header -column results/h200/session27-metrics.db < plans/rowpf/metrics.sql
.read plans/kernel-metrics.sql
select v.model, d.name as dataset, printf('%.4f', m.median_ms) as "layer ms", k.kernel,
       printf('%.4f', k.median_ns / 1e6) as "kernel ms", printf('%.3f', k.dram_read / 1e9) as "GB read",
       printf('%.3f', k.dram_write / 1e9) as "GB written", printf('%.1f', k.dram_pct) as "DRAM %",
       printf('%.1f', k.l2_hit_pct) as "L2 hit %", printf('%.1f', k.sm_pct) as "SM %"
from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id
     join kernel_metrics k on k.measurement_id = m.id
where m.status = 'ok'
order by v.model, d.name, k.median_ns desc;
