# Figure 1: the datasets. Left: nodes and edges (log scale); right: entity compaction ratio
# (unique (src, etype) pairs / edges) and average degree.
# Table: idx,dataset,node_types,edge_types,nodes,edges,density_e6,avg_degree,compaction_pct
# Variables: datafile, outfile, ndatasets, xticsdef.
load 'common.gp'
set multiplot layout 1,2 title "Datasets" font ",12"
eval "set xtics ".xticsdef
if (ndatasets > 6) { set xtics rotate by -30 left }
set xrange [-0.6:ndatasets-0.4]

# every stats first: stats honours the ranges set later
stats datafile skip 1 using 5 nooutput
floor = STATS_min / 4
stats datafile skip 1 using 6 nooutput
top = STATS_max * 2
stats datafile skip 1 using 8 nooutput
degmax = STATS_max

set title "Graph size"
set logscale y
set yrange [floor:top]
set format y "%.0s%c"
set ylabel "count (log scale)"
set key top left
plot datafile skip 1 using ($1-0.2):5:($1-0.38):($1-0.02):(floor):5 with boxxyerror lc 1 title "nodes", \
     datafile skip 1 using ($1+0.2):6:($1+0.02):($1+0.38):(floor):6 with boxxyerror lc 2 title "edges"

set title "Entity compaction ratio and average degree"
unset logscale y
set format y "%g"
set ylabel "entity compaction ratio (%)"
set yrange [0:110]
set y2label "average degree (edges / nodes)"
set y2tics nomirror
set y2range [0:degmax*1.6]
set border 11
set key top left
plot datafile skip 1 using 1:9:(0.5) with boxes lc 3 title "compaction ratio (%)", \
     datafile skip 1 using 1:9:(sprintf("%.0f%%", $9)) with labels offset 0,0.7 notitle, \
     datafile skip 1 using 1:8 axes x1y2 with points pt 7 ps 1.6 lc 2 title "average degree"
unset multiplot
