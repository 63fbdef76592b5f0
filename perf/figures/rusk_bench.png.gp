set terminal pngcairo size 960,540 noenhanced
set output 'perf/figures/rusk_bench.png'
set title 'rusk bench: highest sustained tasks/s (2 agents)'
set style fill solid 0.6
set boxwidth 0.7
set logscale y
set ylabel 'tasks/s (log)'
set xtics rotate by -30
set grid y
plot 'perf/figures/rusk_bench.png.dat' using 0:2:xtic(1) with boxes notitle
