# PostgreSQL 15.18, 344.0 MiB table and index: time until it serves its data again (p50, bar to p99)
# Drawn by the benchmark harness; redraw with: gnuplot postgres.gp
set terminal svg size 960,450 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'postgres.svg'
set title "PostgreSQL 15.18, 344.0 MiB table and index: time until it serves its data again (p50, bar to p99)"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$t << EOD
# row	label	p50	p99	relaunch	text
0	"restart-cold: full scan"	1002.5694550004118	1025.7420589705725	1	"1002.6 (p99 1025.7) ms"
1	"restart-warm: full scan"	807.3550659996727	833.4853691598346	1	"807.4 (p99 833.5) ms"
2	"resume-after-swap: full scan"	1828.8039724993723	2047.4927505996675	0	"1828.8 (p99 2047.5) ms"
3	"resume: full scan"	782.012495500112	798.3599375103586	0	"782.0 (p99 798.4) ms"
5	"restart-cold: 1000 lookups"	233.396275999894	248.9463482199517	1	"233.4 (p99 248.9) ms"
6	"restart-warm: 1000 lookups"	120.61995350040888	133.91920026007028	1	"120.6 (p99 133.9) ms"
7	"resume-after-swap: 1000 lookups"	165.33251899954848	295.4064191400174	0	"165.3 (p99 295.4) ms"
8	"resume: 1000 lookups"	42.241690500304685	47.22418868005661	0	"42.24 (p99 47.22) ms"
10	"restart-cold: first answer"	54.526911499579	61.991060040600125	1	"54.53 (p99 61.99) ms"
11	"restart-warm: first answer"	46.57364949980547	60.42796698930942	1	"46.57 (p99 60.43) ms"
12	"resume-after-swap: first answer"	20.366864000152418	23.898487160267905	0	"20.37 (p99 23.90) ms"
13	"resume: first answer"	2.4159580002560688	5.972097250014485	0	"2.42 (p99 5.97) ms"
EOD
set logscale x 10
set xrange [0.8053193334186896:51187.31876499169]
set yrange [-1:15]
set xlabel 'milliseconds (log scale)'
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 32
set key inside top right horizontal
plot $t using ($5 == 0 ? $3 : NaN):1:3:4 with xerrorbars pt 7 ps 0.9 lc rgb '#4a7bd0' title 'resume', \
     $t using ($5 > 0 ? $3 : NaN):1:3:4 with xerrorbars pt 7 ps 0.9 lc rgb '#d04a4a' title 'restart', \
     $t using 4:1:6:ytic(2) with labels left offset 0.8,0 font 'sans,9' notitle
