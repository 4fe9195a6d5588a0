# median wall time, ms (407 processes, 64830 regions)
# Drawn by the benchmark harness; redraw with: gnuplot vmtracker.gp
set terminal svg size 900,368 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'vmtracker.svg'
set title "median wall time, ms (407 processes, 64830 regions)"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$bars << EOD
# row	label	value	highlight	text
11	"floor: read all smaps in-process (1 thread)"	250.43334200017853	1	"250.4"
10	"floor: cat /proc/[0-9]*/smaps"	263.5153440000977	1	"263.5"
9	"snapshot: full smaps, parsed + classified (1 thread)"	306.68286100012665	0	"306.7"
8	"snapshot: full smaps, parsed + classified (2 threads)"	190.78630300009536	0	"190.8"
7	"snapshot: smaps_rollup only (1 thread)"	86.6635849999966	0	"86.7"
6	"command: mempressure top --full --json"	226.5434669999422	0	"226.5"
5	"command: mempressure top"	61.1265164999395	0	"61.1"
4	"per-process: pmap -XX (20000+ regions)"	295.73693800011824	0	"295.7"
3	"per-process: mempressure vm --only --regions (20000+ regions)"	168.73338400000648	0	"168.7"
2	"per-process: Snapshotter.process (20000+ regions)"	65.1701710000907	0	"65.2"
1	"per-process: read smaps only (20000+ regions)"	54.030047000196646	0	"54.0"
0	"command: smem (all processes, from smaps)"	994.5746350001627	0	"994.6"
EOD
set style fill solid 0.9 noborder
set xrange [0:1173.598069300192]
set yrange [-0.6:11.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 64
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
