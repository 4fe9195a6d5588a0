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
17	"redis freeze"	302.2309869993478	0	"302 ms"
16	"redis swap-file"	1650.2922560030129	0	"1650 ms"
15	"redis zram"	413.75431649794336	0	"414 ms"
14	"redis relaunch-warm"	471.57437150235637	1	"472 ms"
13	"redis relaunch-cold"	479.0368629983277	1	"479 ms"
12	"redis relaunch-killed"	458.60530600111815	1	"459 ms"
11	"postgres freeze"	183.75317549725878	0	"184 ms"
10	"postgres swap-file"	529.0384360014286	0	"529 ms"
9	"postgres zram"	323.76394600214553	0	"324 ms"
8	"postgres relaunch-warm"	274.6928585038404	1	"275 ms"
7	"postgres relaunch-cold"	357.89162250148365	1	"358 ms"
6	"postgres relaunch-killed"	337.51579450108693	1	"338 ms"
5	"chromium freeze"	89.82279150222894	0	"90 ms"
4	"chromium swap-file"	644.7916100005386	0	"645 ms"
3	"chromium zram"	329.4101169958594	0	"329 ms"
2	"chromium relaunch-warm"	932.4257349981053	1	"932 ms"
1	"chromium relaunch-cold"	1201.9278449988633	1	"1202 ms"
0	"chromium relaunch-killed"	918.3353155021905	1	"918 ms"
EOD
set style fill solid 0.9 noborder
set xrange [0:1947.3448620835552]
set yrange [-0.6:17.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 27
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
