# Figure 7: CUPTI counters (IPC, SM / DRAM throughput, occupancy, ...) of GEMM vs traversal
# kernels, forward vs backward, per dataset: time-weighted means over the profiled kernels.
# Table: panel,x,value,base,halfwidth,series,label,xtic (one panel per metric)
# Variables: datafile, outfile, figtitle, npanels, panels, nseries, series, xticsdef, nclusters, rows, cols.
load 'common.gp'
ylab = "time-weighted mean"
logy = 0
load 'panel_bars.gp'
