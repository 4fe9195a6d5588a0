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
0	0.048280898391383185
10	0.09173711468708456
25	0.1608599898187944
50	0.2666646117724669
75	0.3655108157668823
90	0.4249157498808628
100	0.4582088862075407
EOD
$r_eager_squeeze << EOD
# trim %	ratio
0	0.23516321656172398
10	0.2947202996336193
25	0.3396140146239815
50	0.42722216587942635
75	0.5160004390744664
90	0.5844831296166902
100	0.6023677212063862
EOD
$r_eager_swap << EOD
# trim %	ratio
0	0.23198747935401293
10	0.258810275953819
25	0.3125830354163313
50	0.3784556696368762
75	0.4481433253050425
90	0.4845544381842926
100	0.5055470689672804
EOD
$r_lazy_none << EOD
# trim %	ratio
0	0.048314487259184614
10	0.09189142113968304
25	0.15696751415542648
50	0.2656811798114108
75	0.35583768105855834
90	0.4198495536942061
100	0.4696076880162412
EOD
$r_lazy_squeeze << EOD
# trim %	ratio
0	0.23875391162151294
10	0.26432727716090826
25	0.32047762137233726
50	0.42478225517268325
75	0.5023468492229112
90	0.5492317200458627
100	0.5971132317629361
EOD
$r_lazy_swap << EOD
# trim %	ratio
0	0.22074308359381828
10	0.2560333989192496
25	0.2960840895452805
50	0.37727444803794863
75	0.43299150096794314
90	0.48060154757076723
100	0.5185069347304853
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
     $r_lazy_none using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#4a7bd0' title "none, lazy", \
     $r_lazy_squeeze using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#d04a4a' title "squeeze, lazy", \
     $r_lazy_swap using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#3a9a4a' title "swap, lazy"
