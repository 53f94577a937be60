/*
 * cli.h: what the grpo tools do alike on the command line: their name in
 * messages, warnings, dying with a documented exit status, usage errors,
 * and reading the numbers, durations, byte sizes and words that options take.
 *
 * It is the tools' own module, outside lib/, because it prints and exits,
 * which lib/ never does (lib/README.md). A tool calls cli_init() first
 * thing in main(); everything else may be called from then on.
 *
 * Messages name an option as every tool's usage line and SYNOPSIS spell
 * it: -o (the output) and -v by their letter, which is how everyone types
 * them, every other option by its long name (CLI_OUTPUT, cli_option_name).
 *
 * The value parsers take an option's argument whole and either return its
 * value or say what was wrong and exit with CLI_EXIT_USAGE, always in one
 * form, the option's name, what it takes and the argument as given:
 *
 *	grpo-pack: --seq-len: expected a positive integer, got '12x'
 *	grpo-pack: --ranks: expected a positive integer up to 65536, got '70000'
 *	grpo-score: --poll: expected a duration > 0 (seconds, or with s, m, h or d), got '-1'
 *
 * "Whole" means: nothing before the number (not even a blank), nothing
 * after it but the unit a duration or size allows, base 10 only, no
 * overflow, and a value inside the range the caller gives, which the
 * message states. Floating-point values are finite, and one written nonzero
 * is not taken as 0 (1e-50 in a float: "not so small that it would be 0").
 * The tool's usage is not printed after a bad value: the line says all
 * there is to fix, and a screen of options would push it out of sight.
 */
#ifndef GRPO_TOOLS_CLI_H
#define GRPO_TOOLS_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "base/err.h"
#include "data/traj.h"

/* The output option as messages name it: "-o needs --step N". */
#define CLI_OUTPUT "-o"

/* The exit statuses every tool's man page gives the same meaning (EXIT STATUS). */
enum {
	CLI_EXIT_FAILURE = 1,   /* an error: bad input, a failed read or write */
	CLI_EXIT_USAGE = 2,     /* a bad command line: unknown option, bad value, missing operand */
	CLI_EXIT_LATER = 75,    /* temporary: a lock held, a run cut short, a full disk; run again later */
};

/*
 * The status of a failure with errno errnum (struct err's errnum):
 * CLI_EXIT_LATER for a full disk or quota (ENOSPC, EDQUOT), which the same
 * run gets past once space is freed (nothing is half done, so it may simply
 * be run again), and for a resource not there now (EAGAIN: a process or
 * thread limit, an inference server being restarted), else
 * CLI_EXIT_FAILURE.
 */
int cli_failure_status(int errnum);

/*
 * The status of a run with two outcomes, each 0, CLI_EXIT_LATER or another
 * failure: a failure for good outweighs "later", which outweighs success.
 */
int cli_worse_status(int a, int b);

/*
 * The program's name for messages, the last component of argv0 (as
 * getopt's own messages and the man page have it), which it returns; and
 * its synopsis in one line, which follows a usage error's message in place
 * of the whole usage (--help's, 30 to 60 lines, which would push the
 * message off the screen).
 */
const char *cli_init(const char *argv0, const char *synopsis);

/* After a usage error's message, on standard error: "usage: PROG SYNOPSIS"
 * and where the options are told (--help, the man page). */
void cli_usage_hint(void);

/*
 * getopt_long(3), with argv[0] set to the program's name first, so that its
 * messages name the tool as all others do, not the path it was run by, and
 * said through cli_warn(), control bytes as '?', in glibc's own words:
 *
 *	grpo-pack: invalid option -- 'Z'
 *	grpo-step: option '--output' requires an argument
 */
struct option;
int cli_getopt(int argc, char *const *argv, const char *shortopts, const struct option *longopts);

/* An option of longopts as messages name it (above): "-o", "-v", or
 * "--NAME" written into buf. */
const char *cli_option_name(const struct option *o, char *buf, size_t size);

/* The ending a count's noun takes, "" for 1 and "s" for any other count:
 * "%ld file%s", n, cli_s(n). */
static inline const char *cli_s(long long n)
{
	return n == 1 ? "" : "s";
}

/*
 * "prog: message" on standard error (message formatted as by printf), as
 * one line written at once, its control bytes shown as '?' (err.h's rule,
 * err_printable): a file name or a server's reply that the message quotes
 * can neither split it into two lines nor send the terminal an escape
 * sequence. Every line the tools write on standard error goes through it
 * (warnings, notes, -v's reports), save the usage text and the metrics
 * lines of -v, JSON, which writes a control byte escaped.
 */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* cli_warn(), then exit with status (one that the tool's man page documents). */
void cli_die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* cli_warn("%s", e->msg), then exit with cli_failure_status(e->errnum). */
void cli_die_err(const struct err *e) __attribute__((noreturn));

/* Flush standard output at the end of a report: 0, or when stdio could not
 * write all of it the exit status its errno calls for (cli_failure_status),
 * said but for a closed pipe, whose reader has gone: a full disk must not
 * pass for a report written. */
int cli_stdout_flushed(void);

/* A usage error: "prog: message", cli_usage_hint(), exit CLI_EXIT_USAGE. */
void cli_bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/*
 * Options that only some of a tool's modes use (grpo-cat's --stats or
 * --encode, grpo-collect's ways of collecting): given to another mode such
 * an option would do nothing, so it is refused rather than ignored. table
 * lists each by its getopt value (ch) with the modes that take it, one bit
 * a mode, mode_names[k] naming the mode of bit k; given[ch] is nonzero for
 * an option on the command line. The first given that mode does not take
 * is a usage error naming the mode, the option (its long name in longopts)
 * and the modes it goes with:
 *
 *	grpo-cat: --stats takes no --tokenizer (it goes with printing records, --encode, --decode)
 */
struct cli_mode_option {
	int ch;
	unsigned modes;
};
void cli_mode_options(const struct option *longopts, const struct cli_mode_option *table, size_t n,
		      const unsigned char *given, unsigned mode, const char *const *mode_names);

/*
 * An option that only a run on the GPU reads (--precision, --recompute),
 * given (given nonzero) with --device cpu on the command line (cpu_asked
 * nonzero): a usage error naming both, rather than taken and ignored,
 *
 *	grpo-step: --recompute goes with --device auto or cuda (--device cpu runs nothing on the GPU)
 *
 * GRPO_DEVICE=cpu is no such conflict: it says where this machine's runs
 * go, and a command line written for any machine may carry the GPU's
 * options, as --device auto on a machine without a GPU takes them.
 */
void cli_gpu_option(const char *opt, int given, int cpu_asked);

/*
 * An argument that is not what option takes, in the parsers' form, for the
 * checks a tool makes itself: cli_bad_value("--betas", "B1,B2", "0.9")
 * prints "prog: --betas: expected B1,B2, got '0.9'" and exits CLI_EXIT_USAGE.
 */
void cli_bad_value(const char *opt, const char *expected, const char *arg) __attribute__((noreturn));

/*
 * An option's argument that names a file or directory, returned as it is,
 * but an empty one refused in the parsers' form ("prog: -o: expected a
 * path, got ''"): no file has that name, and joined into a path ("/step_1")
 * it would be the root. cli_path_operands refuses an empty operand alike,
 * naming it by its place ("operand 2").
 */
const char *cli_path(const char *opt, const char *arg);
/* The same for a directory to make or publish into (-o QUEUE), where "-"
 * is refused too: standard output cannot hold one. */
const char *cli_dir(const char *opt, const char *arg);
void cli_path_operands(char *const *operands, int n);

/*
 * One of a fixed set of words (a NULL-terminated list), as its index:
 * cli_word("--std", "n", (const char *const[]){ "unbiased", "biased", NULL })
 * prints "prog: --std: expected one of unbiased, biased, got 'n'" and exits
 * CLI_EXIT_USAGE. A tool lists the words in its enum's order, so that the
 * index is the value.
 */
int cli_word(const char *opt, const char *arg, const char *const *words);
/* The same for an environment variable that gives an option its default
 * (GRPO_DEVICE for --device): dflt when it is unset or empty. */
int cli_env_word(const char *var, const char *const *words, int dflt);

/*
 * The largest step a tool takes (--step): a step is written as a JSON number
 * in records (policy_version) and manifests, which hold every integer only
 * up to 2^53 - 1 (TRAJ_INT_MAX); a larger one would fail only when written.
 */
#define CLI_STEP_MAX TRAJ_INT_MAX

/* Integers: min..max; 0..max; 1..max. */
long long cli_int(const char *opt, const char *arg, long long min, long long max);
unsigned long long cli_uint(const char *opt, const char *arg, unsigned long long max);
unsigned long long cli_positive(const char *opt, const char *arg, unsigned long long max);

/*
 * A finite number from min to max (either may be infinite: no bound), its
 * ends included unless open says otherwise. cli_float() also refuses what a
 * float cannot hold.
 */
enum { CLI_ABOVE_MIN = 1, CLI_BELOW_MAX = 2 };
double cli_number(const char *opt, const char *arg, double min, double max, int open);
float cli_float(const char *opt, const char *arg, double min, double max, int open);

/* Whether arg is a whole finite number (0, with *v set) or not (-1): for values a tool takes apart itself. */
int cli_scan_number(const char *arg, double *v);
/* Exactly n numbers separated by commas ("0.9,0.95") into v: 0, or -1. */
int cli_number_list(const char *arg, double *v, int n);

/*
 * A duration in seconds: a number, fractions allowed, or one with the
 * suffix s, m, h or d (90, 1.5m, 2h, 1d). cli_seconds: > 0, at most max
 * seconds (max 0: no maximum). cli_whole_seconds: a whole number of
 * seconds from min to max, for what is kept in whole seconds (leases).
 */
double cli_seconds(const char *opt, const char *arg, double max);
long long cli_whole_seconds(const char *opt, const char *arg, long long min, long long max);

/* A size in bytes, 1..max: a whole number, or one with the suffix K, M or G (powers of 1000: 4K, 1.5G). */
uint64_t cli_bytes(const char *opt, const char *arg, uint64_t max);

/*
 * The loop of the tools that read [FILE...]: the operands in order, "-"
 * meaning standard input and no operand at all the same, as their man
 * pages say. Each input is opened for reading (standard input is used as
 * it is), handed to fn and closed after it, so fn neither opens nor closes.
 * Messages name an input by its operand, and standard input "<stdin>".
 *
 * fn returns 0 to go on, 1 to stop reading with no failure (grpo-cat
 * --head has printed enough), or -1 on failure with the message in e,
 * which the loop prints as "prog: message" (nothing when e->msg is empty:
 * a closed pipe, or a message fn printed itself). A file that cannot be
 * opened is such a failure too. With CLI_INPUTS_ALL the loop goes on to
 * the next input after a failure, as cat(1) does; without, it stops at
 * the first. skip, when given, leaves out the operands the tool reads
 * another way (cli_is_queue: queue directories, consumed after the files).
 *
 * Returns 0 when every input was read, else the worst of the failures'
 * statuses (cli_failure_status of each e->errnum, cli_worse_status).
 */
struct cli_input {
	int fd;
	const char *name;           /* the operand, or "<stdin>" */
	int is_stdin;
};
enum { CLI_INPUTS_ALL = 1 };
int cli_inputs(char **operands, int n, int (*skip)(const char *operand), int flags,
	       int (*fn)(void *ctx, const struct cli_input *in, struct err *e), void *ctx);

/*
 * Whether the directory that a file to publish at target goes into exists
 * and can be written, where the temporary beside it (tempfile.h) is made:
 * 0, or -1 with a message that names target rather than that temporary
 * ("nodir/x.png: cannot create: No such file or directory").
 */
int cli_output_dir(const char *target, struct err *e);

/*
 * What -o names, as every tool publishes it: through a symbolic link its
 * target (*path then points at it, in real; the link stays). 1 when that
 * is a named pipe, a device or a socket, to be written as it is: a
 * temporary renamed over it would replace it with a file (as root,
 * /dev/null for the whole machine). 0 for a file, a directory or nothing yet.
 */
int cli_output_target(const char **path, char *real);

/* Whether an operand names a directory (a queue), rather than a file or "-". */
int cli_is_queue(const char *operand);

/*
 * The first of the n operands that is a queue and the same directory as
 * out (however named: relative, absolute, through a link, a bind mount),
 * or NULL. A stage whose output queue is one of its input queues would
 * drop each output as published already (its name is the input's) and
 * retire the input: consumed, nothing new published.
 */
const char *cli_input_is_output(char **operands, int n, const char *out);

/*
 * A stage's usage error (exit 2, before anything is read) when one of the n
 * operands is a file published in a queue, QUEUE/step_N/rank_X/NAME,
 * however its path is spelled (spool_locate): read as a plain input it is
 * not claimed, so a later run over its queue would take it again. The file
 * whose claim this process inherited from grpo-spool consume (GRPO_CLAIM_FD)
 * is read: consume retires it once the stage exits 0. For a stage that
 * publishes (-o): one writing standard output is a look at the file.
 */
void cli_refuse_queue_files(char **operands, int n);

/*
 * Warn of each directory of queue named like a step or a rank but not as
 * the spool names them (step_01, rank_00): no tool reads them, so what
 * they hold would wait unseen. 0 when there are none, 1 when there are
 * (warned), -1 when the queue could not be listed (warned).
 */
int cli_warn_misnamed(const char *queue);

#endif
