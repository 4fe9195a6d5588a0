# Background footprint against resume time (p50); the relaunch lines for comparison
# Drawn by the benchmark harness; redraw with: gnuplot resume-relaunch.gp
set terminal svg size 900,520 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'resume-relaunch.svg'
set title "Background footprint against resume time (p50); the relaunch lines for comparison"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$eager_none << EOD
# footprint MiB	resume ms	trim
53.5703125	56.48775300142006	"0%"
51.0703125	2365.1057759998366	"50%"
40.953125	2953.784363999148	"100%"
EOD
$eager_squeeze << EOD
# footprint MiB	resume ms	trim
53.57421875	146.23632899929362	"0%"
50.7578125	2297.25635000068	"50%"
44.6171875	2861.197494999942	"100%"
EOD
$eager_swap << EOD
# footprint MiB	resume ms	trim
55.015625	187.54763300057675	"0%"
50.80078125	3019.5828629985044	"50%"
38.9453125	2532.0727029993577	"100%"
EOD
$lazy_none << EOD
# footprint MiB	resume ms	trim
55.01953125	16.458885000247392	"0%"
53.58203125	28.949756000656635	"50%"
41.15625	22.693660999721033	"100%"
EOD
$lazy_squeeze << EOD
# footprint MiB	resume ms	trim
55.01953125	27.51866099970357	"0%"
67.79296875	56.34791100055736	"50%"
70.30859375	28.548402999149403	"100%"
EOD
$lazy_swap << EOD
# footprint MiB	resume ms	trim
55.02734375	35.9001939996233	"0%"
67.9453125	35.74562300127582	"50%"
73.59375	49.818371999208466	"100%"
EOD
set key outside right top vertical
set xlabel 'background footprint (MiB): dirty + swapped, what jetsam charges'
set ylabel 'ms from the resume command'
set yrange [0:5271.880911000699]
set xrange [0:*]
set arrow from graph 0, first 3562.456843500513 to graph 1, first 3562.456843500513 nohead lw 1.5 lc rgb 'black'
set label "relaunch, warm (p50 3562 ms)" at graph 0.02, first 3562.456843500513 offset 0,0.7
set arrow from graph 0, first 4572.011010499409 to graph 1, first 4572.011010499409 nohead dt 2 lw 1.5 lc rgb '#555555'
set label "relaunch, cold (p50 4572 ms)" at graph 0.02, first 4572.011010499409 offset 0,0.7
plot $eager_none using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#4a7bd0' title "none: eager, until fully working", \
     $eager_none using 1:2:3 with labels offset 0,0.8 font 'sans,9' notitle, \
     $eager_squeeze using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#d04a4a' title "squeeze: eager, until fully working", \
     $eager_swap using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#3a9a4a' title "swap: eager, until fully working", \
     $lazy_none using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#4a7bd0' title "none: lazy, until ready", \
     $lazy_squeeze using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#d04a4a' title "squeeze: lazy, until ready", \
     $lazy_swap using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#3a9a4a' title "swap: lazy, until ready"
