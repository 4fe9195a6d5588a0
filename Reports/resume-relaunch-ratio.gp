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
0	0.0610499512121915
10	0.10778087473182618
25	0.1754926768172772
50	0.294449946449842
75	0.3976277320435806
90	0.4774007344032677
100	0.5335678947469109
EOD
$r_eager_squeeze << EOD
# trim %	ratio
0	0.3737279022828882
10	0.4195479212600171
25	0.494815786628703
50	0.5961252348387854
75	0.6770373491548833
90	0.7441894775005684
100	0.8121368298769829
EOD
$r_eager_swap << EOD
# trim %	ratio
0	1.6013915921955202
10	1.6922241240683262
25	1.6373933903630051
50	1.508487324017643
75	1.3680681266221815
90	1.3230188412980883
100	1.3137454227836842
EOD
$r_eager_zram << EOD
# trim %	ratio
0	0.7675088352891987
10	0.8141596872576693
25	0.8429601379950408
50	0.8475594904739695
75	0.8596774809240428
90	0.8786950875978925
100	0.9111875233600178
EOD
$r_lazy_none << EOD
# trim %	ratio
0	0.05471333278992076
10	0.09599559885887556
25	0.15896203187591226
50	0.2784170999936741
75	0.39311675361639015
90	0.46578412923684115
100	0.5207767375793425
EOD
$r_lazy_squeeze << EOD
# trim %	ratio
0	0.3649163389489949
10	0.4076086737840758
25	0.4474318535141897
50	0.5628283364682405
75	0.6717452509089961
90	0.7282575841348367
100	0.7994519722804064
EOD
$r_lazy_swap << EOD
# trim %	ratio
0	1.700824071180916
10	1.8044815208197498
25	1.5488611889972101
50	1.5738066185902484
75	1.3960884636589712
90	1.3590395027221704
100	1.3589165880046274
EOD
$r_lazy_zram << EOD
# trim %	ratio
0	0.7639166874580722
10	0.7982216207557368
25	0.7841765423439895
50	0.8245266324603665
75	0.8546803960608576
90	0.8677128491799706
100	0.9186698596686192
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
