/*
 * cli.c: the tools' name, messages, exits and option values (cli.h).
 *
 * Each parser is a scan that says whether the argument is whole and in
 * range, and a description of what the option takes, made from the same
 * range, so that the message can never disagree with the check.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsys.h"
#include "spool/claim.h"
#include "spool/spool.h"

static const char *prog = "grpo";
static const char *synopsis;

const char *cli_init(const char *argv0, const char *syn)
{
	if (argv0 && *argv0) {
		const char *slash = strrchr(argv0, '/');
		prog = slash && slash[1] ? slash + 1 : argv0;
	}
	synopsis = syn;
	return prog;
}

void cli_usage_hint(void)
{
	fprintf(stderr, "usage: %s %s\nRun '%s --help' for every option, or read %s(1).\n", prog,
		synopsis ? synopsis : "...", prog, prog);
}

/*
 * "prog: message" and its newline in one write: standard error is
 * unbuffered, so a line printed in parts could be cut by another process's
 * line on the same terminal or log. What the message quotes of the data
 * (a file name found in a queue, a path a server sent) is shown as err.h's
 * messages show it, control bytes as '?', so that it stays one line and
 * no escape sequence reaches the terminal.
 */
static void vwarn(const char *fmt, va_list ap)
{
	char small[2048], *line = small;
	va_list again;
	va_copy(again, ap);
	int p = snprintf(small, sizeof small, "%.255s: ", prog);   /* NAME_MAX: what a program's name can be */
	int n = vsnprintf(small + p, sizeof small - (size_t)p, fmt, ap);
	size_t len = n < 0 ? (size_t)p : (size_t)p + (size_t)n;
	/* a long line (a path of PATH_MAX bytes, a list of ids) is written
	 * whole; without the memory for it, cut to what the small one holds */
	if (len >= sizeof small) {
		if ((line = malloc(len + 1)) != NULL) {
			memcpy(line, small, (size_t)p);
			vsnprintf(line + p, len + 1 - (size_t)p, fmt, again);
		} else {
			line = small;
			len = sizeof small - 1;
		}
	}
	va_end(again);
	line[len] = '\0';
	err_printable(line);
	line[len] = '\n';
	fwrite(line, 1, len + 1, stderr);
	if (line != small)
		free(line);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
}

void cli_die(int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
	exit(status);
}

void cli_die_err(const struct err *e)
{
	cli_die(cli_failure_status(e->errnum), "%s", e->msg);
}

int cli_failure_status(int errnum)
{
	return errnum == ENOSPC || errnum == EDQUOT || errnum == EAGAIN ? CLI_EXIT_LATER : CLI_EXIT_FAILURE;
}

int cli_worse_status(int a, int b)
{
	if (a == 0 || b == 0)
		return a | b;
	return a == CLI_EXIT_LATER ? b : a;
}

int cli_stdout_flushed(void)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return 0;
	int saved = errno;
	if (saved != EPIPE)
		cli_warn("standard output: %s", strerror(saved));
	return cli_failure_status(saved);
}

void cli_bad_usage(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
	cli_usage_hint();
	exit(CLI_EXIT_USAGE);
}

/* Do two entries of longopts do the same (getopt takes either for a prefix
 * of both)? */
static int same_option(const struct option *a, const struct option *b)
{
	return a->has_arg == b->has_arg && a->flag == b->flag && a->val == b->val;
}

/*
 * The long option that --NAME (len bytes of it) names as getopt reads it:
 * NAME whole, else the one option it begins (or several that do the same),
 * else NULL, and *ambiguous set when it begins options that differ.
 */
static const struct option *long_option_named(const struct option *longopts, const char *name, size_t len,
                                              int *ambiguous)
{
	const struct option *found = NULL;
	*ambiguous = 0;
	for (const struct option *o = longopts; o->name; o++) {
		if (strncmp(o->name, name, len) != 0)
			continue;
		if (strlen(o->name) == len)
			return o;
		if (!found)
			found = o;
		else if (!same_option(found, o))
			*ambiguous = 1;
	}
	return *ambiguous ? NULL : found;
}

/*
 * Say what getopt_long refused, in the words of glibc's own messages (which
 * opterr = 0 keeps it from printing), through cli_warn: the option is text
 * the user typed, or a script took from a file name, and must not reach
 * the terminal as an escape sequence. word is the argument that held a
 * refused long option (getopt moved past it), or NULL for a short option
 * refused inside a cluster such as -Zv.
 */
static void say_refused(const char *word, const char *shortopts, const struct option *longopts)
{
	if (word && word[0] == '-' && word[1] == '-') {
		const char *name = word + 2, *eq = strchr(name, '=');
		size_t len = eq ? (size_t)(eq - name) : strlen(name);
		int ambiguous;
		const struct option *o = long_option_named(longopts, name, len, &ambiguous);
		if (o) {
			cli_warn("option '--%s' %s", o->name, eq ? "doesn't allow an argument" : "requires an argument");
		} else if (ambiguous) {
			char list[1024];
			size_t at = 0;
			for (const struct option *c = longopts; c->name && at < sizeof list; c++)
				if (strncmp(c->name, name, len) == 0)
					at += (size_t)snprintf(list + at, sizeof list - at, " '--%s'", c->name);
			cli_warn("option '--%.*s' is ambiguous; possibilities:%s", (int)len, name, list);
		} else {
			cli_warn("unrecognized option '%s'", word);
		}
		return;
	}
	if (optopt != ':' && strchr(shortopts, optopt))
		cli_warn("option requires an argument -- '%c'", optopt);
	else
		cli_warn("invalid option -- '%c'", optopt);
}

int cli_getopt(int argc, char *const *argv, const char *shortopts, const struct option *longopts)
{
	/* getopt's messages name argv[0]: make it the program's name, as every
	 * other message has it, rather than the path it was run by (or
	 * grpo-spool's command); main's argv is the program's to change */
	if (argc > 0 && argv[0] != prog)
		((char **)argv)[0] = (char *)prog;
	opterr = 0;
	int before = optind;
	int ch = getopt_long(argc, argv, shortopts, longopts, NULL);
	/* a refused long option always moves optind past its argument; a
	 * short one only at the end of its cluster */
	if (ch == '?')
		say_refused(optind != before && optind > 0 ? argv[optind - 1] : NULL, shortopts, longopts);
	return ch;
}

const char *cli_option_name(const struct option *o, char *buf, size_t size)
{
	if (o->val == 'o')
		return CLI_OUTPUT;
	if (o->val == 'v')
		return "-v";
	snprintf(buf, size, "--%s", o->name ? o->name : "?");
	return buf;
}

/* The names of the modes in the set, "a, b, c". */
static void mode_list(char *out, size_t size, unsigned modes, const char *const *mode_names)
{
	size_t len = 0;
	out[0] = 0;
	for (unsigned k = 0; modes >> k && len < size; k++)
		if (modes >> k & 1)
			len += (size_t)snprintf(out + len, size - len, "%s%s", len ? ", " : "", mode_names[k]);
}

void cli_mode_options(const struct option *longopts, const struct cli_mode_option *table, size_t n,
		      const unsigned char *given, unsigned mode, const char *const *mode_names)
{
	for (size_t i = 0; i < n; i++) {
		if (!given[table[i].ch] || (table[i].modes & mode))
			continue;
		const struct option *o = longopts;
		while (o->name && o->val != table[i].ch)
			o++;
		unsigned k = 0;
		while (mode >> k > 1)
			k++;
		char with[256], name[64];
		mode_list(with, sizeof with, table[i].modes, mode_names);
		cli_bad_usage("%s takes no %s (it goes with %s)", mode_names[k], cli_option_name(o, name, sizeof name),
			      with);
	}
}

void cli_gpu_option(const char *opt, int given, int cpu_asked)
{
	if (given && cpu_asked)
		cli_bad_usage("%s goes with --device auto or cuda (--device cpu runs nothing on the GPU)", opt);
}

void cli_bad_value(const char *opt, const char *expected, const char *arg)
{
	cli_warn("%s: expected %s, got '%s'", opt, expected, arg);
	exit(CLI_EXIT_USAGE);
}

/* ---- scans: 0 when s is whole, -1 when not ---- */

/* A number starts with a digit or a point, after one optional sign: no
 * blank, and none of strtod's words (inf, nan). */
static int starts_number(const char *s)
{
	if (*s == '+' || *s == '-')
		s++;
	return isdigit((unsigned char)*s) || (*s == '.' && isdigit((unsigned char)s[1]));
}

static int scan_int(const char *s, long long *v)
{
	char *end;
	if (!starts_number(s))
		return -1;
	errno = 0;
	*v = strtoll(s, &end, 10);
	return errno || *end ? -1 : 0;
}

static int scan_uint(const char *s, unsigned long long *v)
{
	char *end;
	/* strtoull takes "-1" as ULLONG_MAX */
	if (!starts_number(s) || *s == '-')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end ? -1 : 0;
}

/*
 * Whether the number arg, held as held, was given nonzero but is held as 0
 * (1e-400 in a double, 1e-50 in a float): 0 often means "off" (--tis-cap,
 * --std-eps), which is not what was asked for.
 */
static int lost_to_zero(const char *arg, double held)
{
	if (held != 0)
		return 0;
	for (; *arg && *arg != 'e' && *arg != 'E'; arg++)
		if (*arg >= '1' && *arg <= '9')
			return 1;
	return 0;
}

/* A finite number, the rest after it in *rest (NULL: nothing may follow). */
static int scan_number(const char *s, double *v, const char **rest)
{
	char *end;
	/* base 10: strtod would take hexadecimal (0x1p3) too */
	if (!starts_number(s) || strpbrk(s, "xX"))
		return -1;
	*v = strtod(s, &end);
	if (!isfinite(*v))   /* overflow; an underflow to 0 is the caller's to refuse (lost_to_zero) */
		return -1;
	if (rest)
		*rest = end;
	return rest || !*end ? 0 : -1;
}

int cli_scan_number(const char *arg, double *v)
{
	return scan_number(arg, v, NULL) < 0 || lost_to_zero(arg, *v) ? -1 : 0;
}

int cli_number_list(const char *arg, double *v, int n)
{
	char one[64];
	for (int i = 0; i < n; i++) {
		const char *end = i + 1 < n ? strchr(arg, ',') : arg + strlen(arg);
		if (!end || snprintf(one, sizeof one, "%.*s", (int)(end - arg), arg) >= (int)sizeof one ||
		    cli_scan_number(one, &v[i]) < 0)
			return -1;
		arg = end + 1;
	}
	return 0;
}

/* A number and one of the unit letters in units (their values in scale), or none. */
static int scan_unit(const char *s, const char *units, const double *scale, double *v)
{
	const char *rest;
	if (scan_number(s, v, &rest) < 0)
		return -1;
	if (!*rest)
		return 0;
	const char *u = rest[1] ? NULL : strchr(units, *rest);
	if (!u)
		return -1;
	*v *= scale[u - units];
	return isfinite(*v) ? 0 : -1;
}

static const char sec_units[] = "smhd";
static const double sec_scale[] = { 1, 60, 3600, 86400 };

/* ---- what an option takes, from its range ---- */

/* Bounds at or beyond these are left out of messages: nobody types such numbers. */
#define HUGE_INT LLONG_MAX

static void int_what(char *w, size_t n, long long min, long long max)
{
	if (min == LLONG_MIN && max >= HUGE_INT)
		snprintf(w, n, "an integer");
	else if (max >= HUGE_INT && min == 1)
		snprintf(w, n, "a positive integer");
	else if (max >= HUGE_INT && min == 0)
		snprintf(w, n, "a non-negative integer");
	else if (max >= HUGE_INT)
		snprintf(w, n, "an integer >= %lld", min);
	else if (min == LLONG_MIN)
		snprintf(w, n, "an integer <= %lld", max);
	else if (min == 1)
		snprintf(w, n, "a positive integer up to %lld", max);
	else
		snprintf(w, n, "an integer from %lld to %lld", min, max);
}

static void number_what(char *w, size_t n, const char *noun, double min, double max, int open)
{
	char lo[40] = "", hi[40] = "";
	if (!isinf(min))
		snprintf(lo, sizeof lo, "%s %g", open & CLI_ABOVE_MIN ? ">" : ">=", min);
	if (!isinf(max))
		snprintf(hi, sizeof hi, "%s %g", open & CLI_BELOW_MAX ? "<" : "<=", max);
	if (*lo && *hi && !open)
		snprintf(w, n, "%s from %g to %g", noun, min, max);
	else
		snprintf(w, n, "%s%s%s%s%s", noun, *lo ? " " : "", lo, *lo && *hi ? " and " : *hi ? " " : "", hi);
}

/* Seconds as a person would write them: 86400 as 1d, 600 as 10m. */
static void seconds_text(char *w, size_t n, double s)
{
	for (int k = 3; k > 0; k--)
		if (s >= sec_scale[k] && fmod(s, sec_scale[k]) == 0) {
			snprintf(w, n, "%.0f%c", s / sec_scale[k], sec_units[k]);
			return;
		}
	snprintf(w, n, s == floor(s) && s < 1e15 ? "%.0fs" : "%gs", s);
}

/* ---- the parsers ---- */

long long cli_int(const char *opt, const char *arg, long long min, long long max)
{
	long long v;
	if (scan_int(arg, &v) == 0 && v >= min && v <= max)
		return v;
	char w[128];
	int_what(w, sizeof w, min, max);
	cli_bad_value(opt, w, arg);
}

static unsigned long long uint_in(const char *opt, const char *arg, unsigned long long min,
                                  unsigned long long max)
{
	unsigned long long v;
	if (scan_uint(arg, &v) == 0 && v >= min && v <= max)
		return v;
	char w[128];
	int_what(w, sizeof w, (long long)min, max >= HUGE_INT ? HUGE_INT : (long long)max);
	cli_bad_value(opt, w, arg);
}

unsigned long long cli_uint(const char *opt, const char *arg, unsigned long long max)
{
	return uint_in(opt, arg, 0, max);
}

unsigned long long cli_positive(const char *opt, const char *arg, unsigned long long max)
{
	return uint_in(opt, arg, 1, max);
}

static int in_range(double v, double min, double max, int open)
{
	return (open & CLI_ABOVE_MIN ? v > min : v >= min) && (open & CLI_BELOW_MAX ? v < max : v <= max);
}

static void __attribute__((noreturn)) bad_number(const char *opt, const char *arg, double min, double max, int open,
                                                 int lost)
{
	char w[160];
	number_what(w, sizeof w, "a number", min, max, open);
	if (lost)
		snprintf(w + strlen(w), sizeof w - strlen(w), "%snot so small that it would be 0",
		         strcmp(w, "a number") ? " and " : " ");
	cli_bad_value(opt, w, arg);
}

double cli_number(const char *opt, const char *arg, double min, double max, int open)
{
	double v;
	if (scan_number(arg, &v, NULL) < 0)
		bad_number(opt, arg, min, max, open, 0);
	if (lost_to_zero(arg, v))
		bad_number(opt, arg, min, max, open, 1);
	if (!in_range(v, min, max, open))
		bad_number(opt, arg, min, max, open, 0);
	return v;
}

float cli_float(const char *opt, const char *arg, double min, double max, int open)
{
	double v;
	if (scan_number(arg, &v, NULL) < 0)
		bad_number(opt, arg, min, max, open, 0);
	if (lost_to_zero(arg, (float)v))
		bad_number(opt, arg, min, max, open, 1);
	if (!in_range(v, min, max, open) || fabs(v) > FLT_MAX)
		bad_number(opt, arg, min, max, open, 0);
	return (float)v;
}

double cli_seconds(const char *opt, const char *arg, double max)
{
	double v;
	if (scan_unit(arg, sec_units, sec_scale, &v) == 0 && v > 0 && (max <= 0 || v <= max))
		return v;
	char w[160], m[40] = "";
	if (max > 0)
		seconds_text(m, sizeof m, max);
	snprintf(w, sizeof w, "a duration > 0%s%s (seconds, or with s, m, h or d)", *m ? " and <= " : "", m);
	cli_bad_value(opt, w, arg);
}

long long cli_whole_seconds(const char *opt, const char *arg, long long min, long long max)
{
	double v;
	/* 2^63 itself is a double; what is below it converts */
	if (scan_unit(arg, sec_units, sec_scale, &v) == 0 && v == floor(v) && v >= -0x1p63 && v < 0x1p63 &&
	    (long long)v >= min && (long long)v <= max)
		return (long long)v;
	char w[160], r[64];
	if (max >= HUGE_INT && min == 1)
		snprintf(r, sizeof r, "> 0");
	else if (max >= HUGE_INT)
		snprintf(r, sizeof r, ">= %lld", min);
	else
		snprintf(r, sizeof r, "from %lld to %lld", min, max);
	snprintf(w, sizeof w, "a whole number of seconds %s (or with s, m, h or d)", r);
	cli_bad_value(opt, w, arg);
}

const char *cli_path(const char *opt, const char *arg)
{
	if (!*arg)
		cli_bad_value(opt, "a path", arg);
	return arg;
}

const char *cli_dir(const char *opt, const char *arg)
{
	if (strcmp(arg, "-") == 0)
		cli_bad_value(opt, "a directory, which standard output ('-') cannot be", arg);
	return cli_path(opt, arg);
}

void cli_path_operands(char *const *operands, int n)
{
	for (int i = 0; i < n; i++)
		if (!*operands[i]) {
			char opt[32];
			snprintf(opt, sizeof opt, "operand %d", i + 1);
			cli_path(opt, operands[i]);
		}
}

int cli_word(const char *opt, const char *arg, const char *const *words)
{
	for (int i = 0; words[i]; i++)
		if (strcmp(arg, words[i]) == 0)
			return i;
	char w[256] = "one of";
	size_t n = strlen(w);
	for (int i = 0; words[i] && n < sizeof w; i++)
		n += (size_t)snprintf(w + n, sizeof w - n, "%s %s", i ? "," : "", words[i]);
	cli_bad_value(opt, w, arg);
}

int cli_env_word(const char *var, const char *const *words, int dflt)
{
	const char *v = getenv(var);
	return v && *v ? cli_word(var, v, words) : dflt;
}

/*
 * Exactly, in integers: "1.1K" is 1100 bytes, where a double would make it
 * 1100.0000000000002; a size that is not a whole number of bytes is refused.
 */
static int scan_bytes(const char *s, uint64_t *v)
{
	uint64_t mant = 0, scale = 1, k = 1;
	int digits = 0, point = 0;
	for (; isdigit((unsigned char)*s) || (*s == '.' && !point); s++) {
		if (*s == '.') {
			point = 1;
			continue;
		}
		if (__builtin_mul_overflow(mant, 10, &mant) || __builtin_add_overflow(mant, (uint64_t)(*s - '0'), &mant))
			return -1;
		if (point && __builtin_mul_overflow(scale, 10, &scale))
			return -1;
		digits++;
	}
	switch (*s) {
	case 'K': case 'k': k = 1000; break;
	case 'M': case 'm': k = 1000 * 1000; break;
	case 'G': case 'g': k = 1000 * 1000 * 1000; break;
	}
	if (k > 1)
		s++;
	if (!digits || *s || __builtin_mul_overflow(mant, k, &mant) || mant % scale)
		return -1;
	*v = mant / scale;
	return 0;
}

uint64_t cli_bytes(const char *opt, const char *arg, uint64_t max)
{
	uint64_t v;
	if (scan_bytes(arg, &v) == 0 && v >= 1 && v <= max)
		return v;
	char w[160], r[64] = "> 0";
	if (max < (uint64_t)HUGE_INT)
		snprintf(r, sizeof r, "from 1 to %llu", (unsigned long long)max);
	snprintf(w, sizeof w, "a size in bytes %s (or with K, M or G, powers of 1000)", r);
	cli_bad_value(opt, w, arg);
}

/* ---- the inputs a tool reads ---- */

int cli_inputs(char **operands, int n, int (*skip)(const char *operand), int flags,
	       int (*fn)(void *ctx, const struct cli_input *in, struct err *e), void *ctx)
{
	static char dash[] = "-";
	char *stdin_only[] = { dash };
	if (n == 0) {
		operands = stdin_only;
		n = 1;
	}
	int status = 0;
	for (int i = 0; i < n; i++) {
		if (skip && skip(operands[i]))
			continue;
		struct err e = { 0 };
		struct cli_input in = { 0, "<stdin>", 1 };
		int r;
		if (strcmp(operands[i], "-") != 0) {
			in = (struct cli_input){ fsys_open_read(operands[i], &e), operands[i], 0 };
			r = in.fd < 0 ? -1 : fn(ctx, &in, &e);
			if (in.fd >= 0)
				close(in.fd);
		} else {
			r = fn(ctx, &in, &e);
		}
		if (r < 0) {
			if (e.msg[0])
				cli_warn("%s", e.msg);
			status = cli_worse_status(status, cli_failure_status(e.errnum));
		}
		if (r > 0 || (r < 0 && !(flags & CLI_INPUTS_ALL)))
			break;
	}
	return status;
}

int cli_output_dir(const char *target, struct err *e)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(target, '/');
	if (!slash)
		snprintf(dir, sizeof dir, ".");
	else if (snprintf(dir, sizeof dir, "%.*s", slash == target ? 1 : (int)(slash - target), target) >=
		 (int)sizeof dir)
		return err_set(e, "%s: path too long", target);
	struct stat st;
	if (stat(dir, &st) < 0)
		return err_sys(e, "%s: cannot create", target);
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return err_sys(e, "%s: cannot create", target);
	}
	if (access(dir, W_OK | X_OK) < 0)
		return err_sys(e, "%s: cannot create", target);
	return 0;
}

int cli_output_target(const char **path, char *real)
{
	struct stat st;
	if (lstat(*path, &st) == 0 && S_ISLNK(st.st_mode) && realpath(*path, real))
		*path = real;
	return stat(*path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

int cli_is_queue(const char *operand)
{
	struct stat sb;
	return strcmp(operand, "-") != 0 && stat(operand, &sb) == 0 && S_ISDIR(sb.st_mode);
}

const char *cli_input_is_output(char **operands, int n, const char *out)
{
	struct stat so, si;
	if (!out || stat(out, &so) < 0)
		return NULL;
	for (int i = 0; i < n; i++)
		if (cli_is_queue(operands[i]) && stat(operands[i], &si) == 0 && si.st_dev == so.st_dev &&
		    si.st_ino == so.st_ino)
			return operands[i];
	return NULL;
}

/* The descriptor of the claim grpo-spool consume handed this process, or -1. */
static int inherited_claim_fd(void)
{
	const char *v = getenv("GRPO_CLAIM_FD");
	char *end;
	long fd = v && *v ? strtol(v, &end, 10) : -1;
	return fd >= 0 && fd <= INT_MAX && !*end ? (int)fd : -1;
}

void cli_refuse_queue_files(char **operands, int n)
{
	char queue[PATH_MAX];
	struct stat st;
	for (int i = 0; i < n; i++) {
		const char *a = operands[i];
		if (strcmp(a, "-") != 0 && stat(a, &st) == 0 && S_ISREG(st.st_mode) &&
		    spool_queue_of_real(a, queue, sizeof queue) && !claim_held_by(a, inherited_claim_fd()))
			cli_bad_usage("%s: a file of the queue %s, which a run over that queue would take again: "
				      "name the queue (%s), or run this on the file under grpo-spool consume",
				      a, queue, queue);
	}
}

/*
 * Say which directories of queue are named like a step or a rank but not
 * as the spool names them (step_01): no tool reads them, so what they hold
 * would wait unseen. 0 when there are none, 1 when there are (said), -1.
 */
int cli_warn_misnamed(const char *queue)
{
	struct err e;
	char **paths;
	size_t n;
	if (spool_misnamed(queue, &paths, &n, &e) < 0) {
		cli_warn("%s", e.msg);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		cli_warn("%s/%s: not part of the spool, and no tool reads it: steps and ranks are step_N and "
			 "rank_X, N and X in decimal without leading zeros", queue, paths[i]);
	fsys_free_names(paths, n);
	return n != 0;
}
