-- The CUPTI counters of each kernel time (--metrics runs) as columns, for the per-session queries under plans/,
-- which start with `.read plans/kernel-metrics.sql` (run them from the repository root).
create temp view if not exists kernel_metrics as
select k.measurement_id, k.kernel, k.median_ns,
       (select value from metrics x where x.measurement_id = k.measurement_id and x.kernel = k.kernel
        and x.name = 'dram__bytes_read.sum') as dram_read,
       (select value from metrics x where x.measurement_id = k.measurement_id and x.kernel = k.kernel
        and x.name = 'dram__bytes_write.sum') as dram_write,
       (select value from metrics x where x.measurement_id = k.measurement_id and x.kernel = k.kernel
        and x.name = 'gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed') as dram_pct,
       (select value from metrics x where x.measurement_id = k.measurement_id and x.kernel = k.kernel
        and x.name = 'lts__t_sector_hit_rate.pct') as l2_hit_pct,
       (select value from metrics x where x.measurement_id = k.measurement_id and x.kernel = k.kernel
        and x.name = 'sm__throughput.avg.pct_of_peak_sustained_elapsed') as sm_pct
from kernel_times k;
