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
0	0.0622195772256394
10	0.11629275907964065
25	0.18638184216760664
50	0.3081122322502872
75	0.41567254389161357
90	0.5013708047161791
100	0.5386830136968183
EOD
$r_eager_squeeze << EOD
# trim %	ratio
0	0.3103914145077633
10	0.32162822417738346
25	0.38894188956548936
50	0.5010440711098704
75	0.595794987489939
90	0.6792232146224649
100	0.7285409438859813
EOD
$r_eager_swap << EOD
# trim %	ratio
0	1.8600309560010042
10	1.6855788301350703
25	1.6411341180285737
50	1.5072854487245049
75	1.3825757985191545
90	1.3645657169521903
100	1.3567526859623449
EOD
$r_eager_zram << EOD
# trim %	ratio
0	0.7962701574834644
10	0.7980389174543563
25	0.8293437521349504
50	0.8367447536724819
75	0.8601627280280532
90	0.9061012833433859
100	0.9025523302876525
EOD
$r_lazy_none << EOD
# trim %	ratio
0	0.05681410592364254
10	0.10363986886063731
25	0.17393648865346653
50	0.2844932284651303
75	0.3989207716558647
90	0.47247283621427977
100	0.5069420403692052
EOD
$r_lazy_squeeze << EOD
# trim %	ratio
0	0.27265693983439615
10	0.3046269649726961
25	0.3688552329893515
50	0.484188122184589
75	0.5705859750129175
90	0.6402324873980149
100	0.6664665929346719
EOD
$r_lazy_swap << EOD
# trim %	ratio
0	1.753985260543581
10	1.744080223819147
25	1.7217399754910734
50	1.6167819873814833
75	1.4393299390557786
90	1.3724937953897407
100	1.3376117621962165
EOD
$r_lazy_zram << EOD
# trim %	ratio
0	0.7575945221391278
10	0.7889182307267887
25	0.7838618436779199
50	0.8393506002438591
75	0.8390087497167718
90	0.870152419314368
100	0.8542077844988842
EOD
set key outside right top vertical
set xlabel 'trim level (%): share of what it can rebuild that the app frees in the background'
set ylabel 'resume full / relaunch'
set xrange [-2:102]
set yrange [0:*]
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 1.5 lc rgb 'black'
set label 'break-even' at graph 0.01, first 1 offset 0,0.6 font 'sans,9'
plot $r_eager_none using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#4a7bd0' title "none, eager", \
     $r_eager_squeeze using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#d04a4a' title "squeeze, eager", \
     $r_eager_swap using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#3a9a4a' title "swap, eager", \
     $r_eager_zram using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#b07a20' title "zram, eager", \
     $r_lazy_none using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#4a7bd0' title "none, lazy", \
     $r_lazy_squeeze using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#d04a4a' title "squeeze, lazy", \
     $r_lazy_swap using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#3a9a4a' title "swap, lazy", \
     $r_lazy_zram using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#b07a20' title "zram, lazy"
