# Resume (until fully working) / relaunch, p50, per trim level; above 1 relaunching is as quick
# Drawn by the benchmark harness; redraw with: gnuplot resume-relaunch-ratio.gp
set terminal svg size 900,440 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'resume-relaunch-ratio.svg'
set title "Resume (until fully working) / relaunch, p50, per trim level; above 1 relaunching is as quick"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$r_eager_none << EOD
# trim %	ratio
0	0.06991671489115339
10	0.11433660485325708
25	0.18416428750500627
50	0.29291231844935994
75	0.4010321944261814
90	0.4754319018980438
100	0.5037908383676764
EOD
$r_eager_squeeze << EOD
# trim %	ratio
0	0.37915255213032273
10	0.4261993396294259
25	0.49169272224153526
50	0.5871401634018405
75	0.7019532836114563
90	0.7443459452053114
100	0.7670967440631172
EOD
$r_eager_swap << EOD
# trim %	ratio
0	1.632903101100837
10	1.7147551662439426
25	1.682619061475222
50	1.520300504216324
75	1.4169265490076004
90	1.328506615486807
100	1.257365454078127
EOD
$r_eager_zram << EOD
# trim %	ratio
0	0.7654699104604124
10	0.8129020273678876
25	0.8403285434923079
50	0.8494313362500405
75	0.874862146398799
90	0.8910734758742583
100	0.884597740486725
EOD
$r_lazy_none << EOD
# trim %	ratio
0	0.06188126331798371
10	0.09921631930436281
25	0.1611213296555946
50	0.2824100440942063
75	0.40614604791596337
90	0.47714380836419645
100	0.5111131186230048
EOD
$r_lazy_squeeze << EOD
# trim %	ratio
0	0.3729414568262769
10	0.40368898239573375
25	0.48625864320229173
50	0.5793498264044237
75	0.6808804422752325
90	0.7410776321335735
100	0.7726570084409231
EOD
$r_lazy_swap << EOD
# trim %	ratio
0	1.7064054388500747
10	1.6608218243563058
25	1.7045743726984282
50	1.5464679077485877
75	1.4547705547643486
90	1.3999223457951513
100	1.3166214355135442
EOD
$r_lazy_zram << EOD
# trim %	ratio
0	0.7689927523683548
10	0.7655575843165698
25	0.8230560448585967
50	0.8386462379980989
75	0.8641802351210695
90	0.8796050108898252
100	0.8693501781746862
EOD
set key outside right top vertical
set xlabel 'trim level (%): share of what it can rebuild that the app frees in the background'
set ylabel 'resume full / relaunch'
set xrange [-2:102]
set yrange [0:*]
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 1.5 lc rgb 'black'
plot $r_eager_none using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#4a7bd0' title "none, eager", \
     $r_eager_squeeze using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#d04a4a' title "squeeze, eager", \
     $r_eager_swap using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#3a9a4a' title "swap, eager", \
     $r_eager_zram using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#b07a20' title "zram, eager", \
     $r_lazy_none using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#4a7bd0' title "none, lazy", \
     $r_lazy_squeeze using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#d04a4a' title "squeeze, lazy", \
     $r_lazy_swap using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#3a9a4a' title "swap, lazy", \
     $r_lazy_zram using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#b07a20' title "zram, lazy"
