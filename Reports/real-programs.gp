# Until working with the data checked: median ms (relaunches in grey)
# Drawn by the benchmark harness; redraw with: gnuplot real-programs.gp
set terminal svg size 900,440 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'real-programs.svg'
set title "Until working with the data checked: median ms (relaunches in grey)"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$bars << EOD
# row	label	value	highlight	text
14	"redis freeze"	320.2847024986113	0	"320 ms"
13	"redis swap-file"	1711.7087290025665	0	"1712 ms"
12	"redis zram"	435.249266003666	0	"435 ms"
11	"redis relaunch-warm"	492.6377265037445	1	"493 ms"
10	"redis relaunch-cold"	501.94703099987237	1	"502 ms"
9	"postgres freeze"	179.73978400186752	0	"180 ms"
8	"postgres swap-file"	508.58266800059937	0	"509 ms"
7	"postgres zram"	316.3984850034467	0	"316 ms"
6	"postgres relaunch-warm"	272.7001594976173	1	"273 ms"
5	"postgres relaunch-cold"	340.98224949775613	1	"341 ms"
4	"chromium freeze"	92.62453450355679	0	"93 ms"
3	"chromium swap-file"	638.1419995013857	0	"638 ms"
2	"chromium zram"	235.11512800178025	0	"235 ms"
1	"chromium relaunch-warm"	902.1950975002255	1	"902 ms"
0	"chromium relaunch-cold"	1234.1547414980596	1	"1234 ms"
EOD
set style fill solid 0.9 noborder
set xrange [0:2019.8163002230285]
set yrange [-0.6:14.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 25
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
