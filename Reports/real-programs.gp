# Until working with the data checked: median ms (relaunches in grey)
# Drawn by the benchmark harness; redraw with: gnuplot real-programs.gp
set terminal svg size 900,512 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'real-programs.svg'
set title "Until working with the data checked: median ms (relaunches in grey)"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$bars << EOD
# row	label	value	highlight	text
17	"redis freeze"	320.6390219966124	0	"321 ms"
16	"redis swap-file"	1733.4479069977533	0	"1733 ms"
15	"redis zram"	438.0929789986112	0	"438 ms"
14	"redis relaunch-warm"	501.5982660006557	1	"502 ms"
13	"redis relaunch-cold"	518.5887520019605	1	"519 ms"
12	"redis relaunch-killed"	482.9489229960018	1	"483 ms"
11	"postgres freeze"	186.24797250595293	0	"186 ms"
10	"postgres swap-file"	531.7186809952545	0	"532 ms"
9	"postgres zram"	329.015786992386	0	"329 ms"
8	"postgres relaunch-warm"	279.7164755029371	1	"280 ms"
7	"postgres relaunch-cold"	354.4688904948998	1	"354 ms"
6	"postgres relaunch-killed"	340.9100050048437	1	"341 ms"
5	"chromium freeze"	84.64888050366426	0	"85 ms"
4	"chromium swap-file"	636.5205745023559	0	"637 ms"
3	"chromium zram"	337.02580600220244	0	"337 ms"
2	"chromium relaunch-warm"	911.6018424901995	1	"912 ms"
1	"chromium relaunch-cold"	1173.8824835047126	1	"1174 ms"
0	"chromium relaunch-killed"	884.9278590059839	1	"885 ms"
EOD
set style fill solid 0.9 noborder
set xrange [0:2045.468530257349]
set yrange [-0.6:17.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 27
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
