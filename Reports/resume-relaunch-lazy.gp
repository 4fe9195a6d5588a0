# Resume until ready ÷ lazy relaunch until ready (p50); at 1 or above, relaunching lazily is as quick
# Drawn by the benchmark harness; redraw with: gnuplot resume-relaunch-lazy.gp
set terminal svg size 900,560 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'resume-relaunch-lazy.svg'
set title "Resume until ready ÷ lazy relaunch until ready (p50); at 1 or above, relaunching lazily is as quick"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$l_eager_none << EOD
# trim %	ready ratio
0	0.08352543037189364
10	0.19559841274639345
25	0.33756387254085773
50	0.5669498018142005
75	0.7646991084637265
90	0.9375981629594593
100	1.0043049015224965
EOD
$l_eager_squeeze << EOD
# trim %	ready ratio
0	0.5389302765813764
10	0.6105041047546818
25	0.7466065865408721
50	0.9480850977297983
75	1.1135686633199513
90	1.2740968797486867
100	1.3655717346450242
EOD
$l_eager_swap << EOD
# trim %	ready ratio
0	3.377020000605731
10	3.316752824262751
25	3.2547358978448293
50	2.9185912501627795
75	2.6162117730348227
90	2.592913715660595
100	2.5686307719161356
EOD
$l_eager_zram << EOD
# trim %	ready ratio
0	1.4373045436192222
10	1.5618218590000463
25	1.627834113629405
50	1.6092171083173012
75	1.622656482219405
90	1.7121437680089837
100	1.7104746565615083
EOD
$l_lazy_none << EOD
# trim %	ready ratio
0	0.06954100725847408
10	0.1666759841768298
25	0.29742181739396467
50	0.29502788657233037
75	0.29372698019603244
90	0.2930184827651908
100	0.2664348559943589
EOD
$l_lazy_squeeze << EOD
# trim %	ready ratio
0	0.1524120236989974
10	0.20707934260551417
25	0.3314260113613627
50	0.3429542762325669
75	0.3386849848847916
90	0.33395450421652173
100	0.3091866043907838
EOD
$l_lazy_swap << EOD
# trim %	ready ratio
0	0.26632839588959706
10	0.41939382906306055
25	0.5638379449879766
50	0.5761788925123432
75	0.5640468117316174
90	0.5812063915638451
100	0.5622839247800457
EOD
$l_lazy_zram << EOD
# trim %	ready ratio
0	0.13797230083599987
10	0.2409561349984792
25	0.3693507530014561
50	0.3725086276610173
75	0.3719266282384786
90	0.3700399027651308
100	0.3392822169401449
EOD
$cost_128 << EOD
# trim %	ready ratio
0	0.08957723782132886
25	0.30304319095373317
50	0.47906148563241513
75	0.7026387947664016
100	0.8669981075568024
EOD
$cost_1024 << EOD
# trim %	ready ratio
0	0.0835040938862568
25	0.48519310827831
50	0.9114826298687098
75	1.2926423470964832
100	1.732288094943354
EOD
$cost_2048 << EOD
# trim %	ready ratio
0	0.054314342550954346
25	0.6053356407847086
50	1.1489325537528792
75	1.7091173600423606
100	2.279628110945775
EOD
set key below horizontal maxcols 4
set label 'eager or lazy: the restore; cost: the decode cost (256 in the solid and dashed lines)' at graph 0.99, graph 0.96 right font 'sans,9'
set xlabel 'trim level (%): share of what it can rebuild that the app frees in the background'
set ylabel 'resume ready / lazy relaunch ready'
set xrange [-2:102]
set yrange [0:*]
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 1.5 lc rgb 'black'
set label 'break-even' at graph 0.01, first 1 offset 0,0.6 font 'sans,9'
plot $l_eager_none using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#4a7bd0' title "none, eager", \
     $l_eager_squeeze using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#d04a4a' title "squeeze, eager", \
     $l_eager_swap using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#3a9a4a' title "swap, eager", \
     $l_eager_zram using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#b07a20' title "zram, eager", \
     $l_lazy_none using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#4a7bd0' title "none, lazy", \
     $l_lazy_squeeze using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#d04a4a' title "squeeze, lazy", \
     $l_lazy_swap using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#3a9a4a' title "swap, lazy", \
     $l_lazy_zram using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#b07a20' title "zram, lazy", \
     $cost_128 using 1:2 with linespoints lw 1.5 pt 5 ps 0.6 dt 3 lc rgb '#9a9a9a' title "none, eager, cost 128", \
     $cost_1024 using 1:2 with linespoints lw 1.5 pt 5 ps 0.6 dt 3 lc rgb '#5a5a5a' title "none, eager, cost 1024", \
     $cost_2048 using 1:2 with linespoints lw 1.5 pt 5 ps 0.6 dt 3 lc rgb '#2a2a2a' title "none, eager, cost 2048"
