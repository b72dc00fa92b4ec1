# Figure 9: sensitivity to the GEMM schedule: per dataset, the best time over the other keys
# for each tile x coarsening (x launch bounds) cell, divided by the best overall (1 = best).
# Table: panel,x,y,value,label (x: tile and lb combination, y: coarsening; label: the value
#        printed, or n/a where nothing ran ok)
# Variables: datafile, outfile, figtitle, npanels, panels, xticsdef, yticsdef, nx, ny, cbmax, xlabel, rows, cols.
load 'common.gp'
gl = 0.06
gr = 0.89
ghs = 0.05
gt = 1.0 - 70.0 / height
gb = 60.0 / height
gvs = 90.0 / height
load 'grid.gp'
set multiplot title figtitle font ",12"
set palette defined (0 "#ffffff", 0.4 "#fdd49e", 0.7 "#fc8d59", 1 "#d7301f")
set cbrange [1:cbmax]
set cblabel "time / best time"
set colorbox user origin screen 0.92, screen gb size screen 0.018, screen gt - gb
eval "set xtics ".xticsdef
eval "set ytics ".yticsdef
set xrange [-0.5:nx-0.5]
set yrange [-0.5:ny-0.5]
set xlabel xlabel
set ylabel "coarsening"
set border 15
unset grid
set tics scale 0
do for [p=0:npanels-1] {
    eval panel(p)
    if (p == npanels - 1) { set colorbox } else { unset colorbox }
    set title word(panels, p+1) font ",11"
    plot datafile skip 1 using ($1==p ? $2 : NaN):3:($2-0.5):($2+0.5):($3-0.5):($3+0.5):4 \
            with boxxyerror fs solid 1.0 border lc rgb "#ffffff" lc palette notitle, \
         datafile skip 1 using ($1==p ? $2 : NaN):3:5 with labels font ",9" notitle
}
unset multiplot
