# median wall time, ms (410 processes, 64911 regions)
# Drawn by the benchmark harness; redraw with: gnuplot vmtracker.gp
set terminal svg size 900,368 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'vmtracker.svg'
set title "median wall time, ms (410 processes, 64911 regions)"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$bars << EOD
# row	label	value	highlight	text
11	"floor: read all smaps in-process (1 thread)"	244.95530699641677	1	"245.0"
10	"floor: cat /proc/[0-9]*/smaps"	256.85028699808754	1	"256.9"
9	"snapshot: full smaps, parsed + classified (1 thread)"	304.2943460022798	0	"304.3"
8	"snapshot: full smaps, parsed + classified (2 threads)"	178.38881199713796	0	"178.4"
7	"snapshot: smaps_rollup only (1 thread)"	84.36372299911454	0	"84.4"
6	"command: mempressure top --full --json"	218.74663749622414	0	"218.7"
5	"command: mempressure top"	60.11031250454835	0	"60.1"
4	"per-process: pmap -XX (20000+ regions)"	295.2471160024288	0	"295.2"
3	"per-process: mempressure vm --only --regions (20000+ regions)"	167.12507399643073	0	"167.1"
2	"per-process: Snapshotter.process (20000+ regions)"	64.84022799850209	0	"64.8"
1	"per-process: read smaps only (20000+ regions)"	52.97337000229163	0	"53.0"
0	"command: smem (all processes, from smaps)"	885.337765001168	0	"885.3"
EOD
set style fill solid 0.9 noborder
set xrange [0:1044.6985627013783]
set yrange [-0.6:11.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 64
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
