# redis-server 7.0.15, 304.7 MiB RDB: time until it serves its data again (p50, bar to p99)
# Drawn by the benchmark harness; redraw with: gnuplot redis.gp
set terminal svg size 960,450 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'redis.svg'
set title "redis-server 7.0.15, 304.7 MiB RDB: time until it serves its data again (p50, bar to p99)"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$t << EOD
# row	label	p50	p99	relaunch	text
0	"relaunch-cold: every key"	1133.7101529998108	1455.430946300057	1	"1133.7 (p99 1455.4) ms"
1	"relaunch-warm: every key"	1078.2642915000906	1300.515282910155	1	"1078.3 (p99 1300.5) ms"
2	"resume-after-swap: every key"	1436.1372030002713	1699.4295249404147	0	"1436.1 (p99 1699.4) ms"
3	"resume: every key"	467.95589049997943	520.9483482994256	0	"468.0 (p99 520.9) ms"
5	"relaunch-cold: sample"	614.3630874998962	941.7929726001508	1	"614.4 (p99 941.8) ms"
6	"relaunch-warm: sample"	560.9230599998227	615.9204188600688	1	"560.9 (p99 615.9) ms"
7	"resume-after-swap: sample"	82.7974659996471	226.97999341035012	0	"82.80 (p99 227.0) ms"
8	"resume: sample"	55.59097350032971	72.93628055951558	0	"55.59 (p99 72.94) ms"
10	"relaunch-cold: first reply"	554.0133314998457	889.1240773198384	1	"554.0 (p99 889.1) ms"
11	"relaunch-warm: first reply"	505.0790089999282	561.2754498403683	1	"505.1 (p99 561.3) ms"
12	"resume-after-swap: first reply"	5.952981499831367	7.1437682695977855	0	"5.95 (p99 7.14) ms"
13	"resume: first reply"	0.128030999803741	0.14005014006215788	0	"0.128 (p99 0.140) ms"
EOD
set logscale x 10
set xrange [0.04267699993458033:42485.73812351037]
set yrange [-1:15]
set xlabel 'milliseconds (log scale)'
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 32
set key inside top right horizontal
plot $t using ($5 == 0 ? $3 : NaN):1:3:4 with xerrorbars pt 7 ps 0.9 lc rgb '#4a7bd0' title 'resume', \
     $t using ($5 > 0 ? $3 : NaN):1:3:4 with xerrorbars pt 7 ps 0.9 lc rgb '#d04a4a' title 'relaunch', \
     $t using 4:1:6:ytic(2) with labels left offset 0.8,0 font 'sans,9' notitle
