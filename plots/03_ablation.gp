# Figure 3: speed-up of compaction (C), reordering (R) and both (C+R) over the unoptimized
# layout (U), each with its best schedule, plus the oracle, the best fixed config and the
# cost model's pick; per model x task, per dataset and their geomean.
# Table: panel,x,value,base,halfwidth,series,label,xtic (value = U ms / variant ms)
# Variables: datafile, outfile, npanels, panels, nseries, series, xticsdef, nclusters, rows, cols.
load 'common.gp'
ylab = "speed-up over U (log scale)"
logy = 1
figtitle = "Compaction and reordering ablation: speed-up over unoptimized (U)"
load 'panel_bars.gp'
