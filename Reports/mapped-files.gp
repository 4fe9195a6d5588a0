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
15	"1 MiB, cold, first byte"	0.45395930970623966	0	"0.454x"
14	"1 MiB, cold, full scan"	0.561490848406077	1	"0.561x"
13	"1 MiB, warm, first byte"	0.33661388103738976	0	"0.337x"
12	"1 MiB, warm, full scan"	1.2779131901586755	1	"1.278x"
11	"16 MiB, cold, first byte"	0.2567332608370587	0	"0.257x"
10	"16 MiB, cold, full scan"	1.0716744595174585	1	"1.072x"
9	"16 MiB, warm, first byte"	0.030151744012571733	0	"0.030x"
8	"16 MiB, warm, full scan"	0.7081372214354784	1	"0.708x"
7	"256 MiB, cold, first byte"	0.02224661814012182	0	"0.022x"
6	"256 MiB, cold, full scan"	0.46003914972772475	1	"0.460x"
5	"256 MiB, warm, first byte"	0.0005362278815706159	0	"0.001x"
4	"256 MiB, warm, full scan"	0.11255915574635189	1	"0.113x"
3	"1024 MiB, cold, first byte"	0.004622330276387514	0	"0.005x"
2	"1024 MiB, cold, full scan"	0.4298519507959211	1	"0.430x"
1	"1024 MiB, warm, first byte"	0.00014133917849879098	0	"0.000x"
0	"1024 MiB, warm, full scan"	0.10608676814374828	1	"0.106x"
EOD
set style fill solid 0.9 noborder
set xrange [0:1.507937564387237]
set yrange [-0.6:15.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 29
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
