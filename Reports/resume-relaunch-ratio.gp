# Resume (until fully working) / relaunch, p50, per trim level; above 1 relaunching is as quick
# Drawn by the benchmark harness; redraw with: gnuplot resume-relaunch-ratio.gp
set terminal svg size 900,440 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'resume-relaunch-ratio.svg'
set title "Resume (until fully working) / relaunch, p50, per trim level; above 1 relaunching is as quick"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$r_eager_none << EOD
# trim %	ratio
0	0.009544256937337693
50	0.40254954059953013
100	1.0437415571766164
EOD
$r_eager_squeeze << EOD
# trim %	ratio
0	0.024708313278228967
50	0.3910013233726046
100	1.0110253020561846
EOD
$r_eager_swap << EOD
# trim %	ratio
0	0.0316883342359541
50	0.5139439033285528
100	0.8947266219307931
EOD
$r_lazy_none << EOD
# trim %	ratio
0	0.012436274173392771
50	0.6050508454088661
100	1.461439249192324
EOD
$r_lazy_squeeze << EOD
# trim %	ratio
0	0.05519320851067923
50	0.4919990582906989
100	1.675218155411153
EOD
$r_lazy_swap << EOD
# trim %	ratio
0	0.061209639934618386
50	0.43350953390485136
100	1.6756827763549151
EOD
set key outside right top vertical
set xlabel 'trim level (%): share of what it can rebuild that the app frees in the background'
set ylabel 'resume full / relaunch'
set xrange [-2:102]
set yrange [0:*]
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 1.5 lc rgb 'black'
plot $r_eager_none using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#4a7bd0' title "none, eager", \
     $r_eager_squeeze using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#d04a4a' title "squeeze, eager", \
     $r_eager_swap using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#3a9a4a' title "swap, eager", \
     $r_lazy_none using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#4a7bd0' title "none, lazy", \
     $r_lazy_squeeze using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#d04a4a' title "squeeze, lazy", \
     $r_lazy_swap using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#3a9a4a' title "swap, lazy"
