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
17	"redis freeze"	337.7305349931703	0	"338 ms"
16	"redis swap-file"	1780.8561355122947	0	"1781 ms"
15	"redis zram"	464.0872399904765	0	"464 ms"
14	"redis relaunch-warm"	519.7575084966957	1	"520 ms"
13	"redis relaunch-cold"	564.8164864978753	1	"565 ms"
12	"redis relaunch-killed"	507.7536755052279	1	"508 ms"
11	"postgres freeze"	190.51405850768788	0	"191 ms"
10	"postgres swap-file"	550.5198744940571	0	"551 ms"
9	"postgres zram"	337.66098850173876	0	"338 ms"
8	"postgres relaunch-warm"	291.69428149907617	1	"292 ms"
7	"postgres relaunch-cold"	373.0399909982225	1	"373 ms"
6	"postgres relaunch-killed"	352.37217899702955	1	"352 ms"
5	"chromium freeze"	91.6983729985077	0	"92 ms"
4	"chromium swap-file"	665.2631750039291	0	"665 ms"
3	"chromium zram"	355.0006990044494	0	"355 ms"
2	"chromium relaunch-warm"	953.1292920000851	1	"953 ms"
1	"chromium relaunch-cold"	1246.2555860038265	1	"1246 ms"
0	"chromium relaunch-killed"	936.8369119983981	1	"937 ms"
EOD
set style fill solid 0.9 noborder
set xrange [0:2101.4102399045078]
set yrange [-0.6:17.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 27
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
