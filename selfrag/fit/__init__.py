"""Training, apart from the runtime: fitting the weights the engine reads (`critic`: the critic's heads, maps and
cut). The engine never imports this package; the CLI's fit commands and the benchmarks do."""
