# time mapped / time read (below 1: mapping is faster)
# Drawn by the benchmark harness; redraw with: gnuplot mapped-files.gp
set terminal svg size 900,464 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'mapped-files.svg'
set title "time mapped / time read (below 1: mapping is faster)"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$bars << EOD
# row	label	value	highlight	text
15	"1 MiB, cold, first byte"	1.294887184315017	0	"1.295x"
14	"1 MiB, cold, full scan"	0.9511556122423427	1	"0.951x"
13	"1 MiB, warm, first byte"	0.5940129132569855	0	"0.594x"
12	"1 MiB, warm, full scan"	0.7485828789110424	1	"0.749x"
11	"16 MiB, cold, first byte"	0.2223896757286367	0	"0.222x"
10	"16 MiB, cold, full scan"	0.8984201943894331	1	"0.898x"
9	"16 MiB, warm, first byte"	0.021841455566463462	0	"0.022x"
8	"16 MiB, warm, full scan"	0.6041069457129676	1	"0.604x"
7	"256 MiB, cold, first byte"	0.014954141026089685	0	"0.015x"
6	"256 MiB, cold, full scan"	0.7282297138057371	1	"0.728x"
5	"256 MiB, warm, first byte"	0.0005102598701189951	0	"0.001x"
4	"256 MiB, warm, full scan"	0.06758808693244368	1	"0.068x"
3	"1024 MiB, cold, first byte"	0.0014927813873272318	0	"0.001x"
2	"1024 MiB, cold, full scan"	0.606029352738662	1	"0.606x"
1	"1024 MiB, warm, first byte"	0.00010621674603493626	0	"0.000x"
0	"1024 MiB, warm, full scan"	0.03619614789823336	1	"0.036x"
EOD
set style fill solid 0.9 noborder
set xrange [0:1.5279668774917199]
set yrange [-0.6:15.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 29
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
