/* SPDX-License-Identifier: MIT */
/*
 * The files a command reads and writes (outfile.c): one place where every command's
 * outputs are checked against its inputs and against each other, opened, and put in place.
 *
 * Rules, the same for every command:
 *  - Before anything is opened for writing, every input is compared with every output by
 *    (st_dev, st_ino), and the outputs with each other (an output that does not exist yet:
 *    by its path with the directory resolved). A clash is refused naming both flags, exit 2:
 *    an output never destroys an input.
 *  - A regular-file output is written to a temporary file beside its target
 *    (DIR/.NAME.rusk-XXXXXX, the target's mode) and renamed over the target only when it
 *    is complete (cli_out_close); a run that fails or is killed leaves the previous result
 *    at the target untouched. An output that exists and is not a regular file (/dev/null,
 *    /dev/full, a pipe, a terminal) is written in place. A symbolic link is followed: the
 *    file it names is replaced, the link stays.
 *  - Every write, flush, close and rename is checked; a failure names the flag and path.
 *  - Temporary files not put in place are removed at exit, and by a signal that ends the
 *    process (cli_out_unlink_pending is async-signal-safe).
 * Single-threaded: the main thread opens and closes; other threads may only write to an
 * open output's FILE (stdio locks it).
 */
#ifndef RUSK_CLI_OUTFILE_H
#define RUSK_CLI_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* An input of a command: its flag ("--trace", "predict TRACE") and path (NULL: not given;
 * "-": standard input). */
typedef struct cli_in {
	const char *flag, *path;
} cli_in;

/* An output of a command. The caller sets flag and path (NULL: not given) and, for a file
 * another program writes (gnuplot's PNG), external; cli_files_open sets the rest. */
typedef struct cli_out {
	const char *flag, *path;
	bool external;     /* another program writes name(): no FILE is kept open */
	FILE *f;           /* open for writing (NULL: not given, external, or closed) */
	int slot;          /* its temporary file's entry in the pending list, plus 1; 0: none */
	char target[4096]; /* what is replaced: path, a symbolic link resolved */
} cli_out;

/* Outputs and inputs of one command, at most. */
#define CLI_MAX_OUTS 8

/*
 * Checks the outputs against the inputs and against each other (the rules above), then
 * opens every output that was given. Returns 0; or RUSK_EXIT_USAGE after printing why
 * ("rusk: --json X and --trace Y name the same file", "rusk: --json X: Permission
 * denied"), with nothing left open or created.
 */
int cli_files_open(const cli_in *in, size_t n_in, cli_out *out, size_t n_out);
/* The comparison alone (nothing opened): 0, or -1 after the message. */
int cli_files_check(const cli_in *in, size_t n_in, const cli_out *out, size_t n_out);
/* Where o's content goes: its temporary file, or the target written in place. */
const char *cli_out_name(const cli_out *o);
/* o is complete: flushes, checks every write, closes and renames it into place. 0, or -1
 * after "rusk: FLAG: PATH: write failed: REASON" (the target is left as it was). A no-op
 * for an output not given. */
int cli_out_close(cli_out *o);
/* o is not complete: closes it and removes its temporary file (the target is untouched). */
void cli_out_discard(cli_out *o);
/* cli_out_close on each of n outputs; 0, or -1 if any failed (each failure printed). */
int cli_outs_close(cli_out *o, size_t n);
void cli_outs_discard(cli_out *o, size_t n);
/* Removes every temporary file not yet put in place. Async-signal-safe: a handler that
 * ends the process calls it first. */
void cli_out_unlink_pending(void);

/* fflush(stdout), remembering why it failed for cli_stdout_close: 0 or -1. */
int cli_stdout_flush(void);
/* Standard output after the command: flushed and closed, a failure ("rusk: stdout: write
 * failed: No space left on device") printed. Returns 0 or -1. main() only. */
int cli_stdout_close(void);

#endif
