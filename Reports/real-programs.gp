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
14	"redis freeze"	325.44714650066453	0	"325 ms"
13	"redis swap-file"	1757.1323505035252	0	"1757 ms"
12	"redis zram"	446.0104589961702	0	"446 ms"
11	"redis relaunch-warm"	504.1918254974007	1	"504 ms"
10	"redis relaunch-cold"	511.6812719970767	1	"512 ms"
9	"postgres freeze"	178.96632099655108	0	"179 ms"
8	"postgres swap-file"	520.7278345005761	0	"521 ms"
7	"postgres zram"	316.8318169991835	0	"317 ms"
6	"postgres relaunch-warm"	270.1747914979933	1	"270 ms"
5	"postgres relaunch-cold"	339.01419850008097	1	"339 ms"
4	"chromium freeze"	98.42184800072573	0	"98 ms"
3	"chromium swap-file"	642.9357980014174	0	"643 ms"
2	"chromium zram"	343.43204050310305	0	"343 ms"
1	"chromium relaunch-warm"	906.0126994991151	1	"906 ms"
0	"chromium relaunch-cold"	1227.6144925017434	1	"1228 ms"
EOD
set style fill solid 0.9 noborder
set xrange [0:2073.4161735941598]
set yrange [-0.6:14.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 25
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
