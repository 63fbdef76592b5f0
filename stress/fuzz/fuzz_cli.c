/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the command-line option parsers (cluster options, integers, numbers,
 * --sync and --strategy values) on argv vectors cut from arbitrary bytes at NUL or newline,
 * then the same vector through the table of `rusk run` / `rusk sim` (drv_parse: cli_parse
 * with every kind of entry, phase and group lists, the rules between flags) and the tables
 * of `rusk experiment` and `rusk plot` (positional arguments: a choice, a file). Parsed
 * cluster shapes are validated by building them when they are small.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "runstate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *buf = malloc(size + 1);
	memcpy(buf, data, size);
	buf[size] = '\0';
	char *argv[64];
	int argc = 0;
	argv[argc++] = (char *)"rusk";
	for (char *p = buf, *tok = buf; argc < 63; p++) {
		if (*p == '\0' || *p == '\n' || p == buf + size) {
			bool end = *p == '\0' && p == buf + size;
			*p = '\0';
			argv[argc++] = tok;
			tok = p + 1;
			if (end || p >= buf + size)
				break;
		}
	}
	cli_cluster cc;
	cli_cluster_init(&cc);
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t u;
		double d;
		rusk_sync_policy sp;
		rusk_strategy st;
		bool all;
		if (cli_cluster_opt(&cc, argc, argv, &i) != 0)
			continue;
		switch (argv[i][0] % 4) {
		case 0: cli_u64(argv[i], v, 1, 1000, &u); break;
		case 1: cli_double(argv[i], v, 0, 1, &d); break;
		case 2: cli_sync_policy(argv[i], v, true, &sp, &all); break;
		default: cli_strategy(argv[i], v, (argv[i][0] & 4) != 0, &st, &all); break;
		}
	}
	/* The run/sim table: the first byte picks the command. */
	cli_cluster rc;
	run_cfg cfg;
	drv_parse(argc, argv, size > 0 && (data[0] & 1), &rc, &cfg);
	/* The positional arguments' tables: they only parse, so both run on every vector. */
	cli_experiment ex;
	cli_experiment_parse(argc, argv, &ex);
	cli_plot pl;
	cli_plot_parse(argc, argv, &pl);
	/* Build small shapes to check the parameters' validation end to end. */
	if (cc.openb_path == NULL &&
	    (uint64_t)cc.params.machines * cc.params.rus_per_machine <= 100000) {
		rusk_cluster *c = NULL;
		double s;
		if (cli_cluster_build(&cc, &c, &s) == RUSK_OK)
			rusk_cluster_destroy(c);
	}
	free(buf);
	return 0;
}
