# Background footprint against resume time (p50); the relaunch lines for comparison
# Drawn by the benchmark harness; redraw with: gnuplot resume-relaunch.gp
set terminal svg size 900,520 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'resume-relaunch.svg'
set title "Background footprint against resume time (p50); the relaunch lines for comparison"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$eager_none << EOD
# footprint MiB	resume ms	trim
50.74609375	6.798553000407992	"0%"
47.732421875	11.410282499127788	"10%"
42.625	17.811781999625964	"25%"
34.5390625	30.357942003320204	"50%"
26.51171875	41.56062949914485	"75%"
21.490234375	48.85744800048997	"90%"
18.4765625	52.18770300052711	"100%"
EOD
$eager_squeeze << EOD
# footprint MiB	resume ms	trim
50.7578125	41.618525501689874	"0%"
47.61328125	44.41567500180099	"10%"
42.58984375	50.22175900012371	"25%"
34.55078125	61.46082050327095	"50%"
26.515625	70.76492950000102	"75%"
21.494140625	76.16075150144752	"90%"
18.48046875	79.43423150209128	"100%"
EOD
$eager_swap << EOD
# footprint MiB	resume ms	trim
50.7421875	178.33176600106526	"0%"
47.609375	179.14825200205087	"10%"
42.587890625	166.18866750286543	"25%"
34.55078125	155.52582449890906	"50%"
26.515625	142.99247250164626	"75%"
21.494140625	135.39846000276157	"90%"
18.48046875	128.49602949791006	"100%"
EOD
$eager_zram << EOD
# footprint MiB	resume ms	trim
50.6796875	85.47016650118167	"0%"
47.60546875	86.19146999990335	"10%"
42.5859375	85.55697300107568	"25%"
34.55078125	87.38382250157883	"50%"
26.515625	89.85474199653254	"75%"
21.49609375	89.92612800284405	"90%"
18.48046875	89.12227350083413	"100%"
EOD
$lazy_none << EOD
# footprint MiB	resume ms	trim
50.87109375	3.5663724993355572	"0%"
47.86328125	3.644629498012364	"10%"
42.755859375	2.9533299966715276	"25%"
34.66796875	2.616352001496125	"50%"
26.63671875	2.130824505002238	"75%"
21.6171875	2.172191503632348	"90%"
18.60546875	1.9656004988064524	"100%"
EOD
$lazy_squeeze << EOD
# footprint MiB	resume ms	trim
50.875	16.75699100451311	"0%"
47.83984375	15.73364949945244	"10%"
42.767578125	15.63738450204255	"25%"
34.78515625	14.936969502741704	"50%"
26.77734375	14.717758000188041	"75%"
21.759765625	14.560428000550019	"90%"
18.744140625	14.572678501281189	"100%"
EOD
$lazy_swap << EOD
# footprint MiB	resume ms	trim
50.87890625	12.82148050449905	"0%"
47.78515625	12.47154849988874	"10%"
42.791015625	11.787788498622831	"25%"
34.8046875	11.547993999556638	"50%"
26.80078125	11.81830550194718	"75%"
21.80078125	11.367395498382393	"90%"
18.767578125	11.056436502258293	"100%"
EOD
$lazy_zram << EOD
# footprint MiB	resume ms	trim
50.87890625	8.797933998721419	"0%"
47.78125	8.87140299892053	"10%"
42.798828125	8.530454499123152	"25%"
34.84375	7.61609000255703	"50%"
26.79296875	7.562600501842098	"75%"
21.796875	7.794851502694655	"90%"
18.765625	7.006536001426866	"100%"
EOD
set key outside right top vertical
set xlabel 'background footprint (MiB): dirty + swapped, what jetsam charges'
set ylabel 'ms from the resume command'
set yrange [0:206.54648795316464]
set xrange [0:*]
set arrow from graph 0, first 103.19843649995164 to graph 1, first 103.19843649995164 nohead lw 1.5 lc rgb 'black'
set label "relaunch, warm (p50 103 ms)" at graph 0.02, first 103.19843649995164 offset 0,0.7
set arrow from graph 0, first 162.11663549984223 to graph 1, first 162.11663549984223 nohead dt 2 lw 1.5 lc rgb '#555555'
set label "relaunch, cold (p50 162 ms)" at graph 0.02, first 162.11663549984223 offset 0,0.7
plot $eager_none using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#4a7bd0' title "none: eager, until fully working", \
     $eager_none using 1:2:3 with labels offset 0,0.8 font 'sans,9' notitle, \
     $eager_squeeze using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#d04a4a' title "squeeze: eager, until fully working", \
     $eager_swap using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#3a9a4a' title "swap: eager, until fully working", \
     $eager_zram using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#b07a20' title "zram: eager, until fully working", \
     $lazy_none using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#4a7bd0' title "none: lazy, until ready", \
     $lazy_squeeze using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#d04a4a' title "squeeze: lazy, until ready", \
     $lazy_swap using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#3a9a4a' title "swap: lazy, until ready", \
     $lazy_zram using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#b07a20' title "zram: lazy, until ready"
