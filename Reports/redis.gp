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
0	"relaunch-cold: every key"	4442.117098000381	8467.231403649781	1	"4442.1 (p99 8467.2) ms"
1	"relaunch-warm: every key"	4698.173453501113	6471.759201539607	1	"4698.2 (p99 6471.8) ms"
2	"resume-after-swap: every key"	3969.75527900031	5846.138703619544	0	"3969.8 (p99 5846.1) ms"
3	"resume: every key"	1648.8060735000545	2293.5716418605257	0	"1648.8 (p99 2293.6) ms"
5	"relaunch-cold: sample"	2175.3769269998884	4274.915073190057	1	"2175.4 (p99 4274.9) ms"
6	"relaunch-warm: sample"	2072.416341999997	2928.5829949897557	1	"2072.4 (p99 2928.6) ms"
7	"resume-after-swap: sample"	129.84436550050305	446.3101131594336	0	"129.8 (p99 446.3) ms"
8	"resume: sample"	29.704191500059096	167.32085882973476	0	"29.70 (p99 167.3) ms"
10	"relaunch-cold: first reply"	2131.015300499712	4204.393575410501	1	"2131.0 (p99 4204.4) ms"
11	"relaunch-warm: first reply"	1938.5528784996495	2792.3194373999286	1	"1938.6 (p99 2792.3) ms"
12	"resume-after-swap: first reply"	4.055046499161108	27.048947250277678	0	"4.06 (p99 27.05) ms"
13	"resume: first reply"	0.1294725007028319	0.18748012067590025	0	"0.129 (p99 0.187) ms"
EOD
set logscale x 10
set xrange [0.0431575002342773:211680.78509124453]
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
