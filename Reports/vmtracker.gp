# median wall time, ms (406 processes, 64804 regions)
# Drawn by the benchmark harness; redraw with: gnuplot vmtracker.gp
set terminal svg size 900,368 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'vmtracker.svg'
set title "median wall time, ms (406 processes, 64804 regions)"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$bars << EOD
# row	label	value	highlight	text
11	"floor: read all smaps in-process (1 thread)"	235.31316799926572	1	"235.3"
10	"floor: cat /proc/[0-9]*/smaps"	243.7218609993579	1	"243.7"
9	"snapshot: full smaps, parsed + classified (1 thread)"	284.1184190037893	0	"284.1"
8	"snapshot: full smaps, parsed + classified (2 threads)"	177.2712949968991	0	"177.3"
7	"snapshot: smaps_rollup only (1 thread)"	80.38255199790001	0	"80.4"
6	"command: mempressure top --full --json"	204.7903860002407	0	"204.8"
5	"command: mempressure top"	54.04259050192195	0	"54.0"
4	"per-process: pmap -XX (20000+ regions)"	276.607600004354	0	"276.6"
3	"per-process: mempressure vm --only --regions (20000+ regions)"	156.11479400104145	0	"156.1"
2	"per-process: Snapshotter.process (20000+ regions)"	60.6558639992727	0	"60.7"
1	"per-process: read smaps only (20000+ regions)"	50.56761999730952	0	"50.6"
0	"command: smem (all processes, from smaps)"	877.4155169958249	0	"877.4"
EOD
set style fill solid 0.9 noborder
set xrange [0:1035.3503100550734]
set yrange [-0.6:11.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 64
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
