# Figure 2: speed-up of the best generated variant over each baseline (PyG, cuBLAS layers, ...)
# per model x task and dataset, log scale; OOM and failures are labelled where the bar would be.
# Table: panel,x,value,base,halfwidth,series,label,xtic (value = baseline ms / generated ms)
# Variables: datafile, outfile, npanels, panels, nseries, series, xticsdef, nclusters, rows, cols.
load 'common.gp'
ylab = "speed-up (log scale)"
logy = 1
figtitle = "Speed-up of the best generated variant over each baseline (above 1x: generated is faster)"
load 'panel_bars.gp'
