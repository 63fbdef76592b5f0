/* SPDX-License-Identifier: MIT */
/* Option helpers shared by the rusk commands (and the CLI fuzz target). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

int cli_openb_path(const char *flag, const char *file, char *buf, size_t len)
{
	const char *env = getenv("RUSK_TRACE_DIR");
	const char *dir = env != NULL && env[0] != '\0' ? env : RUSK_DATA_DIR;
	char where[4200];
	if (dir[0] == '\0') { /* no folder at all: "/openb/..." would name a wrong place */
		snprintf(buf, len, "%s", file);
		snprintf(where, sizeof where,
		         "RUSK_TRACE_DIR is not set (and this rusk was built "
		         "without a trace folder)");
	} else {
		snprintf(buf, len, "%s/openb/%s", dir, file);
		if (access(buf, R_OK) == 0)
			return 0;
		snprintf(where, sizeof where, "%s: %s", buf, strerror(errno));
	}
	fprintf(stderr,
	        "rusk: %s openb: %s\n"
	        "  the openb trace is public data, not shipped with rusk: get %s from the\n"
	        "  Alibaba Cluster Trace Program (github.com/alibaba/clusterdata,\n"
	        "  cluster-trace-gpu-v2023), put it in DIR/openb/ and set RUSK_TRACE_DIR=DIR,\n"
	        "  or pass the file's path (perf/traces/openb/README.md)\n",
	        flag, where, file);
	return -1;
}

/* Whether val is a plain decimal number, as a person writes one: digits, for a real number
 * (real) an optional '-', one '.' and an exponent (e.g. -1.5e3). strtoull and strtod also
 * take leading blanks, a '+', hex (0x10), "inf" and "nan" (and strtoull a '-' it wraps):
 * `--unavailable-ms " 100"` and "+100" were accepted (the seventh review, nit 5). */
bool cli_plain_number(const char *val, bool real)
{
	const char *p = val;
	if (real && *p == '-')
		p++;
	size_t digits = strspn(p, "0123456789");
	p += digits;
	if (real && *p == '.') {
		size_t frac = strspn(p + 1, "0123456789");
		digits += frac;
		p += 1 + frac;
	}
	if (digits == 0)
		return false;
	if (real && (*p == 'e' || *p == 'E')) {
		p++;
		if (*p == '-' || *p == '+')
			p++;
		size_t exp = strspn(p, "0123456789");
		if (exp == 0)
			return false;
		p += exp;
	}
	return *p == '\0';
}

int cli_u64(const char *flag, const char *val, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	errno = 0;
	if (val == NULL) {
		fprintf(stderr, "rusk: %s: needs a value\n", flag);
		return -1;
	}
	unsigned long long v = strtoull(val, &end, 10);
	if (!cli_plain_number(val, false) || *end != '\0' || errno != 0 || v < min || v > max) {
		fprintf(stderr, "rusk: %s: '%s' is not an integer in %llu..%llu\n", flag, val,
		        (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_double(const char *flag, const char *val, double min, double max, double *out)
{
	char *end;
	if (val == NULL) {
		fprintf(stderr, "rusk: %s: needs a value\n", flag);
		return -1;
	}
	errno = 0;
	double v = strtod(val, &end);
	if (!cli_plain_number(val, true) || *end != '\0' || errno != 0 || !isfinite(v) || v < min ||
	    v > max) {
		fprintf(stderr, "rusk: %s: '%s' is not a number in %g..%g\n", flag, val, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_sample(const char *flag, const char *val, void *out)
{
	if (val != NULL && strcmp(val, "auto") == 0) {
		*(uint64_t *)out = 0;
		return 0;
	}
	return cli_u64(flag, val, 1, 4096, out);
}

int cli_opt_slack(const char *flag, const char *val, void *out)
{
	if (val != NULL && strcmp(val, "mix") == 0) {
		*(double *)out = -1;
		return 0;
	}
	return cli_double(flag, val, 0, 10000, out);
}

int cli_opt_strategy(const char *flag, const char *val, void *out)
{
	cli_choice_strategy *c = out;
	return cli_strategy(flag, val, c->all != NULL, c->v, c->all);
}

int cli_opt_sync_policy(const char *flag, const char *val, void *out)
{
	cli_choice_sync *c = out;
	return cli_sync_policy(flag, val, c->all != NULL, c->v, c->all);
}

/* One of the names in `ch` (ended by a NULL name) into *out; the error lists them all:
 * "rusk: FLAG: 'VALUE' is not A, B or C". */
static int parse_choice(const char *flag, const char *val, const cli_choice *ch, int *out)
{
	size_t n = 0;
	for (; ch[n].name != NULL; n++)
		if (val != NULL && strcmp(val, ch[n].name) == 0) {
			*out = ch[n].value;
			return 0;
		}
	fprintf(stderr, "rusk: %s: '%s' is not ", flag, val ? val : "");
	for (size_t k = 0; k < n; k++)
		fprintf(stderr, "%s%s", k == 0 ? "" : k + 1 < n ? ", " : " or ", ch[k].name);
	fputc('\n', stderr);
	return -1;
}

static const cli_choice on_off[] = {{"on", 1}, {"off", 0}, {NULL, 0}};

/* Whether argument v, standing after an option that takes a value, is rather the next option:
 * "--anything", or '-' and a letter ("-h", "-o"). Such a value is missing ("--backend
 * --agents 2" took "--agents" as the address, and "--backend" last crashed), so it is
 * refused as "needs a value" naming the flag. A lone "-" (standard input) and negative
 * numbers ("-5", "-.5") stay values: no option of rusk takes one today, and the range
 * checks refuse them with their usual message. */
static bool option_like(const char *v)
{
	return v[0] == '-' &&
	       (v[1] == '-' || (v[1] >= 'a' && v[1] <= 'z') || (v[1] >= 'A' && v[1] <= 'Z'));
}

/* Refuses a value left out after `flag` (v NULL: the flag came last; or v option_like):
 * "rusk: FLAG: needs WHAT" (e.g. "a value", "a file name") and, before another option,
 * which one came instead. Returns 0 when v is a value, -1 after printing the error. */
static int need_value(const char *flag, const char *v, const char *what)
{
	if (v == NULL) {
		fprintf(stderr, "rusk: %s: needs %s\n", flag, what);
		return -1;
	}
	if (option_like(v)) {
		fprintf(stderr, "rusk: %s: needs %s (found the option '%s' instead)\n", flag, what,
		        v);
		return -1;
	}
	return 0;
}

/* Refuses `flag`, a value option given a second time: a value given twice (e.g.
 * "--backend redis://a --backend redis://b", "--agents 2 --agents 4") is a mistake in a
 * command line, and keeping either silently runs something not asked for. The values are
 * not repeated: a --backend URL may hold a password. Returns -1. */
static int given_twice(const char *flag)
{
	fprintf(stderr, "rusk: %s: given more than once (give it once)\n", flag);
	return -1;
}

/* Parses option o's value v (NULL: none left) into o->out. Returns how many arguments
 * the value took (0 or 1), or -1 after printing the error. */
static int parse_value(const cli_opt *o, const char *a, const char *v)
{
	uint64_t x;
	int rc = 0, on;
	switch (o->kind) {
	case CLI_U64:
		/* 2^64 (UINT64_MAX as a double) does not convert back: the whole range. */
		rc = cli_u64(a, v, (uint64_t)o->min,
		             o->max >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)o->max,
		             o->out);
		break;
	case CLI_U32:
		rc = cli_u64(a, v, (uint64_t)o->min, (uint64_t)o->max, &x);
		if (rc == 0)
			*(uint32_t *)o->out = (uint32_t)x;
		break;
	case CLI_DOUBLE: rc = cli_double(a, v, o->min, o->max, o->out); break;
	case CLI_FLAG: *(bool *)o->out = true; return 0; /* no value */
	case CLI_ON_OFF:
		rc = parse_choice(a, v, on_off, &on);
		if (rc == 0)
			*(bool *)o->out = on != 0;
		break;
	case CLI_CHOICE: rc = parse_choice(a, v, o->choices, o->out); break;
	case CLI_FILE:
		if (v == NULL) {
			fprintf(stderr, "rusk: %s: needs a file name\n", a);
			return -1;
		}
		*(const char **)o->out = v;
		break;
	case CLI_CUSTOM: rc = o->parse(a, v, o->out); break;
	}
	return rc != 0 ? -1 : 1;
}

/* An entry named without a leading '-' is a positional argument (cli.h). */
static bool positional(const cli_opt *o)
{
	return o->name[0] != '-';
}

/* The k-th positional entry of opts[0..n), or NULL. */
static const cli_opt *nth_positional(const cli_opt *opts, size_t n, size_t k)
{
	for (size_t j = 0; j < n; j++)
		if (positional(&opts[j]) && k-- == 0)
			return &opts[j];
	return NULL;
}

/* The option entry named `a`, or NULL. */
static const cli_opt *find_option(const cli_opt *opts, size_t n, const char *a)
{
	for (size_t k = 0; k < n; k++)
		if (!positional(&opts[k]) && strcmp(a, opts[k].name) == 0)
			return &opts[k];
	return NULL;
}

/* Positional argument `a` into entry o; its errors name it "CMD NAME", as the usage does. */
static int parse_positional(const char *cmd, const cli_opt *o, const char *a)
{
	char label[128];
	snprintf(label, sizeof label, "%s %s", cmd, o->name);
	return parse_value(o, label, a) < 0 ? -1 : 0;
}

int cli_parse(const char *cmd, int argc, char **argv, cli_cluster *cc, const cli_opt *opts,
              size_t n, void (*usage)(void))
{
	size_t pos = 0; /* positional arguments taken */
	/* seen[k]: option opts[k], one that takes a value, was given (given_twice). */
	bool seen[CLI_MAX_OPTS] = {false};
	if (n > CLI_MAX_OPTS) {
		fprintf(stderr, "rusk %s: %zu options in its table, more than %d\n", cmd, n,
		        CLI_MAX_OPTS);
		return -1;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		const cli_opt *o = a[0] != '-' ? nth_positional(opts, n, pos) : NULL;
		if (o != NULL) {
			if (parse_positional(cmd, o, a) != 0)
				return -1;
			if (o->given != NULL)
				*o->given = o->name;
			pos++;
			continue;
		}
		if (cc != NULL) {
			int r = cli_cluster_opt(cc, argc, argv, &i);
			if (r < 0)
				return -1;
			if (r > 0)
				continue;
		}
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage();
			return 1;
		}
		o = find_option(opts, n, a);
		if (o == NULL) {
			/* A word past the positional arguments a command takes is not an option. */
			if (a[0] != '-' && nth_positional(opts, n, 0) != NULL)
				fprintf(stderr,
				        "rusk %s: unexpected argument '%s' (try: rusk %s --help)\n",
				        cmd, a, cmd);
			else
				fprintf(stderr,
				        "rusk %s: unknown option '%s' (try: rusk %s --help)\n", cmd,
				        a, cmd);
			return -1;
		}
		if (o->kind != CLI_FLAG && need_value(a, v,
		                                      o->needs != NULL      ? o->needs
		                                      : o->kind == CLI_FILE ? "a file name"
		                                                            : "a value") != 0)
			return -1;
		if (o->kind != CLI_FLAG && !o->repeatable) {
			if (seen[o - opts])
				return given_twice(a);
			seen[o - opts] = true;
		}
		int took = parse_value(o, a, v);
		if (took < 0)
			return -1;
		if (o->given != NULL)
			*o->given = o->name;
		i += took;
	}
	const cli_opt *missing = nth_positional(opts, n, pos);
	if (missing != NULL && !missing->optional) {
		fprintf(stderr, "rusk %s: missing %s (try: rusk %s --help)\n", cmd, missing->name,
		        cmd);
		return -1;
	}
	return 0;
}

int cli_sync_policy(const char *flag, const char *val, bool allow_all, rusk_sync_policy *out,
                    bool *all)
{
	if (allow_all && val != NULL && strcmp(val, "all") == 0) {
		*all = true;
		return 0;
	}
	if (val != NULL && rusk_sync_policy_parse(val, out) == RUSK_OK) {
		if (all != NULL)
			*all = false;
		return 0;
	}
	fprintf(stderr, "rusk: %s: '%s' is not diff, same%s\n", flag, val ? val : "",
	        allow_all ? ", state or all" : " or state");
	return -1;
}

int cli_strategy(const char *flag, const char *val, bool allow_all, rusk_strategy *out, bool *all)
{
	if (allow_all && val != NULL && strcmp(val, "all") == 0) {
		*all = true;
		return 0;
	}
	if (val != NULL && rusk_strategy_parse(val, out) == RUSK_OK) {
		if (all != NULL)
			*all = false;
		return 0;
	}
	fprintf(stderr, "rusk: %s: '%s' is not latency, quality, adaptive, random%s\n", flag,
	        val ? val : "", allow_all ? ", central or all" : " or central");
	return -1;
}

void cli_cluster_init(cli_cluster *cc)
{
	memset(cc, 0, sizeof *cc);
	rusk_cluster_params_init(&cc->params);
}

void cli_cluster_describe(const cli_cluster *cc, const rusk_cluster *c, char *buf, size_t len)
{
	const rusk_cluster_params *p = &cc->params;
	uint32_t np = c != NULL ? rusk_cluster_partitions(c) : p->partitions;
	if (cc->openb_path != NULL)
		snprintf(buf, len, "--cluster %s --machines %u --partitions %u --ru-milli %u",
		         cc->openb_path, cc->openb_machines, np, p->ru_milli ? p->ru_milli : 1000);
	else
		snprintf(
		        buf, len,
		        "--machines %u --rus-per-machine %u --partitions %u --machines-per-rack %u "
		        "--racks-per-cell %u --seed %llu",
		        p->machines, p->rus_per_machine, np, p->machines_per_rack,
		        p->racks_per_cell, (unsigned long long)p->seed);
}

void cli_cluster_usage(void)
{
	puts("cluster options:\n"
	     "  --machines N            machines (default 100000; with --cluster openb: the\n"
	     "                          node list is replicated to N machines)\n"
	     "  --rus-per-machine K     RUs (cores) per machine (default 16; rusk run and rusk\n"
	     "                          sim: 2, ParSync's 200K slots; max 661)\n"
	     "  --partitions P          partitions, groups of whole cells (default 20, or\n"
	     "                          the cluster's cells when it has fewer)\n"
	     "  --machines-per-rack N   (default 40)\n"
	     "  --racks-per-cell N      (default 5)\n"
	     "  --cluster openb[:REPLICAS] | PATH[:REPLICAS]\n"
	     "                          machines from the Alibaba openb node list (1,523 "
	     "machines)\n"
	     "                          or a file in its format; REPLICAS copies of the list;\n"
	     "                          its machines' memory and GPUs (models) are committed\n"
	     "                          with the RUs of tasks that ask for them\n"
	     "  --ru-milli M            milli-cores per RU of a node list and of a trace's\n"
	     "                          cpu_milli (default 1000; 500: two RUs per core)\n"
	     "  --seed S                seed of every random choice (default 1)");
}

int cli_cluster_opt(cli_cluster *cc, int argc, char **argv, int *i)
{
	const char *a = argv[*i];
	const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
	uint64_t x;
	rusk_cluster_params *p = &cc->params;
	/* Every cluster option takes a value: checked once the name is one of them. */
	static const char *const names[] = {
	        "--machines",       "--rus-per-machine", "--partitions", "--machines-per-rack",
	        "--racks-per-cell", "--ru-milli",        "--seed",       "--cluster"};
	_Static_assert(sizeof names / sizeof *names <= 8 * sizeof cc->given,
	               "cc->given: a bit each");
	for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
		if (strcmp(a, names[k]) != 0)
			continue;
		if (need_value(a, v, "a value") != 0)
			return -1;
		if (cc->given & 1u << k)
			return given_twice(a);
		cc->given |= (uint8_t)(1u << k);
	}
	if (strcmp(a, "--machines") == 0) {
		if (cli_u64(a, v, 1, UINT32_MAX, &x))
			return -1;
		p->machines = (uint32_t)x;
		cc->openb_machines = (uint32_t)x;
	} else if (strcmp(a, "--rus-per-machine") == 0) {
		if (cli_u64(a, v, 1, RUSK_MAX_RUS_PER_MACHINE, &x))
			return -1;
		p->rus_per_machine = (uint32_t)x;
	} else if (strcmp(a, "--partitions") == 0) {
		if (cli_u64(a, v, 1, UINT16_MAX, &x))
			return -1;
		p->partitions = (uint32_t)x;
		cc->partitions_set = true;
	} else if (strcmp(a, "--machines-per-rack") == 0) {
		if (cli_u64(a, v, 1, UINT32_MAX, &x))
			return -1;
		p->machines_per_rack = (uint32_t)x;
	} else if (strcmp(a, "--racks-per-cell") == 0) {
		if (cli_u64(a, v, 1, UINT32_MAX, &x))
			return -1;
		p->racks_per_cell = (uint32_t)x;
	} else if (strcmp(a, "--ru-milli") == 0) {
		if (cli_u64(a, v, 1, 1000000, &x))
			return -1;
		p->ru_milli = (uint32_t)x;
	} else if (strcmp(a, "--seed") == 0) {
		if (cli_u64(a, v, 0, UINT64_MAX, &x))
			return -1;
		p->seed = x;
	} else if (strcmp(a, "--cluster") == 0) {
		if (v == NULL) {
			fprintf(stderr,
			        "rusk: --cluster: needs a value (openb[:REPLICAS] or PATH)\n");
			return -1;
		}
		char spec[sizeof cc->openb_buf];
		snprintf(spec, sizeof spec, "%s", v);
		char *colon = strrchr(spec, ':');
		uint64_t replicas = 0;
		if (colon != NULL) {
			*colon = '\0';
			if (cli_u64("--cluster (REPLICAS after ':')", colon + 1, 1, 100000,
			            &replicas))
				return -1;
		}
		if (strcmp(spec, "openb") == 0) {
			if (cli_openb_path("--cluster", "openb_node_list_all_node.csv",
			                   cc->openb_buf, sizeof cc->openb_buf) != 0)
				return -1;
		} else {
			snprintf(cc->openb_buf, sizeof cc->openb_buf, "%s", spec);
		}
		cc->openb_path = cc->openb_buf;
		/* REPLICAS is applied at build time, once the list's length is known. */
		cc->openb_replicas = (uint32_t)replicas;
	} else {
		return 0;
	}
	(*i)++;
	return 1;
}

double cli_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int cli_cluster_size(cli_cluster *cc, uint64_t *machines, uint64_t *rus)
{
	const rusk_cluster_params *p = &cc->params;
	if (cc->openb_path == NULL) {
		*machines = p->machines;
		*rus = (uint64_t)p->machines * p->rus_per_machine;
		return RUSK_OK;
	}
	if (cc->openb_replicas != 0 && cc->openb_machines != 0) {
		fprintf(stderr, "rusk: --machines and --cluster ...:REPLICAS both set the "
		                "size; give one\n");
		return RUSK_EINVAL;
	}
	/* The list once, as it is, to count its machines and RUs. */
	char err[512];
	rusk_cluster *probe;
	int rc = rusk_cluster_create_openb(cc->openb_path, 0,
	                                   &(rusk_cluster_params){.machines_per_rack = 1,
	                                                          .racks_per_cell = 1,
	                                                          .partitions = 1,
	                                                          .ru_milli = p->ru_milli,
	                                                          .seed = 0},
	                                   &probe, err, sizeof err);
	if (rc != RUSK_OK) {
		fprintf(stderr, "rusk: --cluster: %s\n", err);
		return rc;
	}
	uint64_t m1 = rusk_cluster_machines(probe), r1 = rusk_cluster_rus(probe);
	rusk_cluster_destroy(probe);
	uint64_t n = cc->openb_machines != 0   ? cc->openb_machines
	             : cc->openb_replicas != 0 ? m1 * cc->openb_replicas
	                                       : m1;
	*machines = n;
	*rus = m1 > 0 ? (r1 * n + m1 - 1) / m1 : 0;
	return RUSK_OK;
}

/* --partitions left out: the default (20), or as many as the cluster has cells when that is
 * fewer (the openb list's 1,523 machines make 8 cells of 200). */
static void default_partitions(cli_cluster *cc, uint64_t machines)
{
	rusk_cluster_params *p = &cc->params;
	if (cc->partitions_set || p->machines_per_rack == 0 || p->racks_per_cell == 0)
		return;
	uint64_t per_cell = (uint64_t)p->machines_per_rack * p->racks_per_cell;
	uint64_t cells = (machines + per_cell - 1) / per_cell;
	if (cells >= 1 && cells < p->partitions)
		p->partitions = (uint32_t)cells;
}

int cli_cluster_build(cli_cluster *cc, rusk_cluster **out, double *build_s)
{
	char err[512];
	int rc;
	double t0 = cli_now_s();
	if (cc->openb_path != NULL) {
		uint64_t machines, rus;
		if ((rc = cli_cluster_size(cc, &machines, &rus)) != RUSK_OK)
			return rc;
		if (machines > UINT32_MAX) {
			fprintf(stderr,
			        "rusk: --cluster %s: %" PRIu64 " machines, more than %" PRIu32 "\n",
			        cc->openb_path, machines, UINT32_MAX);
			return RUSK_EINVAL;
		}
		default_partitions(cc, machines);
		/* 0: the list as it is (REPLICAS, when given, was turned into a count) */
		uint32_t n =
		        cc->openb_machines != 0 || cc->openb_replicas != 0 ? (uint32_t)machines : 0;
		rc = rusk_cluster_create_openb(cc->openb_path, n, &cc->params, out, err,
		                               sizeof err);
		if (rc != RUSK_OK)
			fprintf(stderr, "rusk: --cluster: %s\n", err);
	} else {
		default_partitions(cc, cc->params.machines);
		rc = rusk_cluster_create(&cc->params, out, err, sizeof err);
		if (rc != RUSK_OK)
			fprintf(stderr, "rusk: cluster options: %s\n", err);
	}
	*build_s = cli_now_s() - t0;
	return rc;
}

rusk_sync_params cli_sync_params(const cli_agents *a, uint32_t partitions, uint64_t start_ns)
{
	return (rusk_sync_params){.policy = a->sync,
	                          .partitions = partitions,
	                          .agents = a->agents,
	                          .gap_ns = a->gap_ms * 1000000,
	                          .start_ns = start_ns,
	                          .random_offset = a->offsets,
	                          .seed = a->seed};
}

int cli_sync_check(const cli_agents *a, uint32_t partitions, char *err, size_t errlen)
{
	rusk_sync_params sp = cli_sync_params(a, partitions, 0);
	return rusk_sync_check(&sp, err, errlen);
}

void cli_agent_params(const cli_agents *a, const rusk_sync_params *sp, uint32_t index,
                      rusk_agent_params *ap)
{
	rusk_agent_params_init(ap, sp, index);
	ap->strategy = a->strategy;
	ap->sample = (uint32_t)a->sample;
	if (a->tau_ms != 0)
		ap->tau_ns = a->tau_ms * 1000000;
	ap->global_lock = a->global_lock;
	ap->seed = a->seed;
}
