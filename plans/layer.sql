-- The layer-wide metrics of each measurement as columns (its span and its graph's gather floor), for the
-- per-session queries under plans/, which start with `.read plans/layer.sql` (run them from the repository root).
create temp view if not exists layer as
select m.id as measurement_id,
       (select value from metrics x where x.measurement_id = m.id and coalesce(x.kernel, '') = ''
        and x.name = 'span_ms') as span_ms,
       (select value from metrics x where x.measurement_id = m.id and coalesce(x.kernel, '') = ''
        and x.name = 'gather_floor_ms') as gather_floor_ms
from measurements m;
