# Figure 4: kernel time of the best U, C, R and C+R variants split into GEMM, traversal and
# other kernels, on two datasets (horizontal stacked bars, total at the end).
# Table: panel,row,layout,gemm,traversal,other,total (ms; row 3 = U at the top)
# Variables: datafile, outfile, figtitle, npanels, panels.
load 'common.gp'
rows = 1
cols = npanels
nlegend = 3
gb = 75.0 / height
load 'grid.gp'
# each panel's longest bar, before any range is set (stats honours the current ranges)
array tmax[npanels]
do for [p=0:npanels-1] {
    stats datafile skip 1 using ($1==p ? $7 : NaN) nooutput
    tmax[p+1] = STATS_max
}
set multiplot title figtitle.": kernel time by category" font ",12"
set ytics ("U" 3, "C" 2, "R" 1, "C+R" 0)
set yrange [-0.6:3.6]
set xlabel "time (ms)"
set grid xtics noytics
unset key
h = 0.35
do for [p=0:npanels-1] {
    eval panel(p)
    set title word(panels, p+1) font ",11"
    set xrange [0:tmax[p+1]*1.3]
    plot datafile skip 1 using ($1==p ? $4/2 : NaN):2:(0):4:($2-h):($2+h) with boxxyerror lc 1, \
         datafile skip 1 using ($1==p ? $4+$5/2 : NaN):2:4:($4+$5):($2-h):($2+h) with boxxyerror lc 2, \
         datafile skip 1 using ($1==p ? $4+$5+$6/2 : NaN):2:($4+$5):($4+$5+$6):($2-h):($2+h) with boxxyerror lc 7, \
         datafile skip 1 using ($1==p ? $7 : NaN):2:(sprintf(" %.3g ms", $7)) with labels left
}
eval legend_strip
set key center center horizontal maxrows 1 reverse Left samplen 1.5 width 2
plot 2 notitle, keyentry with boxxyerror lc 1 title "GEMM", keyentry with boxxyerror lc 2 title "traversal", \
     keyentry with boxxyerror lc 7 title "other"
unset multiplot
