# Figure 6: time of the unoptimized code (U, best schedule) against dims (32, 64, 128) for
# every model x task (panels) and dataset (lines); an OOM or failed point is a gap in its
# line, marked by a cross of the dataset's colour at the bottom.
# Table: panel,series,dims,ms,label,failed
# Variables: datafile, outfile, npanels, panels, nseries, series, xticsdef, xmin, xmax, ymin, ymax, oomy, rows, cols.
load 'common.gp'
nlegend = nseries + 1
gvs = 105.0 / height
load 'grid.gp'
set multiplot title "Unoptimized time against dims (in = out); gaps: out of memory or failed" font ",12"
set logscale x 2
set logscale y
eval "set xtics ".xticsdef
set xrange [xmin:xmax]
set yrange [ymin:ymax]
set format y "%g"
set xlabel "dims"
set ylabel "time (ms, log scale)"
set grid xtics ytics
unset key
do for [p=0:npanels-1] {
    eval panel(p)
    set title word(panels, p+1) font ",11"
    plot for [s=0:nseries-1] datafile skip 1 using ($1==p && $2==s ? $3 : NaN):4 with linespoints lc s+1 pt s+5, \
         for [s=0:nseries-1] datafile skip 1 using ($1==p && $2==s && $6==1 ? $3 : NaN):(oomy) \
            with points pt 2 ps 1.6 lw 2 lc s+1
}
eval legend_strip
set key center center horizontal maxrows 1 reverse Left samplen 2 width 1
plot 2 notitle, for [s=0:nseries-1] keyentry with linespoints lc s+1 pt s+5 title word(series, s+1), \
     keyentry with points pt 2 ps 1.6 lw 2 lc rgb "#333333" title "OOM / failed"
unset multiplot
