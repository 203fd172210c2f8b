/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A batch of small files read together, with io_uring or pread(2): see
 * read-batch.h.
 */
#define _GNU_SOURCE /* liburing.h uses cpu_set_t */

#include "read-batch.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <string.h>
#include <unistd.h>

/* clang-format off */
G_DEFINE_QUARK(vr-read-batch-error-quark, vr_read_batch_error)
/* clang-format on */

/* Submission queue entries of a new ring: 16 domains of 4 files. The ring
 * doubles (up to VR_READ_BATCH_MAX_FILES) when the batch outgrows it, so a
 * run always fits in one submit. */
#define VR_READ_BATCH_RING_MIN_ENTRIES 64

/* io_uring_enter(2) calls in a row that may fail with EAGAIN (the kernel
 * short of memory for requests) before a run gives up on io_uring. */
#define VR_READ_BATCH_MAX_EAGAIN 100

/* Each read asks for one byte more than a file may hold: a read that fills
 * it all means the file is too long. */
#define READ_SIZE_BYTES (VR_READ_BATCH_MAX_BYTES + 1)

/**
 * struct batch_file - one file of a batch.
 * @id:		its id (key of vr_read_batch.files).
 * @path:	as added.
 * @fd:		open descriptor; -1 after a failed reopen.
 * @buf:	READ_SIZE_BYTES + 1 bytes: the text of the last run and its NUL.
 * @len:	bytes of @buf that hold the text when @error is NULL.
 * @error:	why the last run (or the last open) gave no text; NULL when
 *		@buf holds it.
 * @skip:	left out of the runs (vr_read_batch_set_skip()).
 */
struct batch_file {
	guint id;
	char *path;
	int fd;
	char *buf;
	gsize len;
	GError *error;
	gboolean skip;
};

/**
 * struct vr_read_batch - see read-batch.h.
 * @use_uring:	  reads go through @ring.
 * @ring:	  the io_uring, set up when @use_uring.
 * @ring_entries: @ring's submission queue size (>= the number of files).
 * @files:	  id -> struct batch_file (owned).
 * @next_id:	  the id of the next file added.
 * @lookup_error: the error vr_read_batch_text() last gave for an unknown id.
 * @stats:	  cumulative costs.
 */
struct vr_read_batch {
	gboolean use_uring;
	struct io_uring ring;
	guint ring_entries;
	GHashTable *files;
	guint next_id;
	GError *lookup_error;
	struct vr_read_batch_stats stats;
};

static void batch_file_free(gpointer data)
{
	struct batch_file *f = data;

	if (f->fd >= 0)
		close(f->fd);
	g_free(f->path);
	g_free(f->buf);
	g_clear_error(&f->error);
	g_free(f);
}

/* The error of a failed open(2) or read of @path with errno @err. */
static GError *file_error_new(const char *path, const char *what, int err)
{
	if (err == ESRCH)
		return g_error_new(VR_READ_BATCH_ERROR, VR_READ_BATCH_ERROR_GONE,
				   "cannot %s %s: its process has exited (%s)", what, path,
				   g_strerror(err));
	if (err == ENOENT)
		return g_error_new(VR_READ_BATCH_ERROR, VR_READ_BATCH_ERROR_GONE,
				   "cannot %s %s: it does not exist (%s)", what, path,
				   g_strerror(err));
	return g_error_new(VR_READ_BATCH_ERROR, VR_READ_BATCH_ERROR_IO, "cannot %s %s: %s", what,
			   path, g_strerror(err));
}

static void set_file_error(struct batch_file *f, GError *error)
{
	g_clear_error(&f->error);
	f->error = error;
	f->len = 0;
}

static void set_not_read(struct batch_file *f)
{
	set_file_error(f, g_error_new(VR_READ_BATCH_ERROR, VR_READ_BATCH_ERROR_NOT_READ,
				      "%s has not been read yet", f->path));
}

/* Open @f->path into @f->fd; on failure @f->fd is -1 and @error set. */
static gboolean file_open(struct batch_file *f, GError **error)
{
	f->fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (f->fd < 0) {
		g_propagate_error(error, file_error_new(f->path, "open", errno));
		return FALSE;
	}
	return TRUE;
}

/* Record the result of one read of @f: bytes read, or -errno. */
static void file_finish(struct batch_file *f, ssize_t res)
{
	if (res < 0) {
		set_file_error(f, file_error_new(f->path, "read", (int)-res));
		return;
	}
	if (res > VR_READ_BATCH_MAX_BYTES) {
		set_file_error(f, g_error_new(VR_READ_BATCH_ERROR, VR_READ_BATCH_ERROR_TOO_LONG,
					      "%s is longer than %d bytes", f->path,
					      VR_READ_BATCH_MAX_BYTES));
		return;
	}
	g_clear_error(&f->error);
	f->buf[res] = '\0';
	f->len = (gsize)res;
}

/* Stop using io_uring: from now on every run reads with pread(2). */
static void drop_uring(struct vr_read_batch *b)
{
	if (!b->use_uring)
		return;
	io_uring_queue_exit(&b->ring);
	b->use_uring = FALSE;
	b->ring_entries = 0;
}

/* Set up @b->ring with @entries; -errno on failure. */
static int ring_init(struct vr_read_batch *b, guint entries)
{
	int ret = io_uring_queue_init(entries, &b->ring, 0);

	if (ret == 0)
		b->ring_entries = entries;
	return ret;
}

struct vr_read_batch *vr_read_batch_new(gboolean use_uring, GError **error)
{
	g_autoptr(vr_read_batch) b = g_new0(struct vr_read_batch, 1);

	b->files = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, batch_file_free);
	b->next_id = 1;
	if (use_uring) {
		int ret = ring_init(b, VR_READ_BATCH_RING_MIN_ENTRIES);

		if (ret == -ENOSYS || ret == -EPERM || ret == -ENOMEM) {
			g_message("io_uring is not available (%s): reading procfs files with "
				  "pread(2)",
				  g_strerror(-ret));
		} else if (ret < 0) {
			g_set_error(error, VR_READ_BATCH_ERROR, VR_READ_BATCH_ERROR_URING,
				    "cannot set up io_uring: %s", g_strerror(-ret));
			return NULL;
		} else {
			b->use_uring = TRUE;
		}
	}
	return g_steal_pointer(&b);
}

void vr_read_batch_free(struct vr_read_batch *b)
{
	if (!b)
		return;
	drop_uring(b);
	g_hash_table_destroy(b->files);
	g_clear_error(&b->lookup_error);
	g_free(b);
}

gboolean vr_read_batch_uses_uring(const struct vr_read_batch *b)
{
	return b->use_uring;
}

/* Make the ring hold @nr_files submissions at once (doubling it); when a
 * bigger ring cannot be set up, fall back to pread(2). */
static void ring_fit(struct vr_read_batch *b, guint nr_files)
{
	guint entries = b->ring_entries;
	int ret;

	if (!b->use_uring || nr_files <= entries)
		return;
	while (entries < nr_files)
		entries *= 2;
	io_uring_queue_exit(&b->ring);
	ret = ring_init(b, entries);
	if (ret < 0) {
		g_message("cannot grow io_uring to %u entries (%s): reading procfs files with "
			  "pread(2)",
			  entries, g_strerror(-ret));
		b->use_uring = FALSE;
		b->ring_entries = 0;
	}
}

guint vr_read_batch_add(struct vr_read_batch *b, const char *path, GError **error)
{
	struct batch_file *f;

	if (g_hash_table_size(b->files) >= VR_READ_BATCH_MAX_FILES || b->next_id == G_MAXUINT) {
		g_set_error(error, VR_READ_BATCH_ERROR, VR_READ_BATCH_ERROR_NO_FILE,
			    "cannot add %s: the batch holds %u files, the most it can", path,
			    g_hash_table_size(b->files));
		return 0;
	}
	f = g_new0(struct batch_file, 1);
	f->path = g_strdup(path);
	if (!file_open(f, error)) {
		batch_file_free(f);
		return 0;
	}
	f->buf = g_malloc(READ_SIZE_BYTES + 1);
	f->id = b->next_id++;
	set_not_read(f);
	g_hash_table_insert(b->files, GUINT_TO_POINTER(f->id), f);
	ring_fit(b, g_hash_table_size(b->files));
	return f->id;
}

gboolean vr_read_batch_remove(struct vr_read_batch *b, guint id)
{
	return g_hash_table_remove(b->files, GUINT_TO_POINTER(id));
}

static struct batch_file *lookup(const struct vr_read_batch *b, guint id)
{
	return g_hash_table_lookup(b->files, GUINT_TO_POINTER(id));
}

gboolean vr_read_batch_reopen(struct vr_read_batch *b, guint id, GError **error)
{
	struct batch_file *f = lookup(b, id);
	g_autoptr(GError) open_error = NULL;

	if (!f) {
		g_set_error(error, VR_READ_BATCH_ERROR, VR_READ_BATCH_ERROR_NO_FILE,
			    "cannot reopen file %u: the batch has no such file", id);
		return FALSE;
	}
	if (f->fd >= 0)
		close(f->fd);
	if (!file_open(f, &open_error)) {
		set_file_error(f, g_error_copy(open_error));
		g_propagate_error(error, g_steal_pointer(&open_error));
		return FALSE;
	}
	set_not_read(f);
	return TRUE;
}

static void run_pread(struct vr_read_batch *b)
{
	GHashTableIter it;
	gpointer v;

	g_hash_table_iter_init(&it, b->files);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct batch_file *f = v;
		ssize_t n;

		if (f->fd < 0 || f->skip)
			continue;
		do {
			n = pread(f->fd, f->buf, READ_SIZE_BYTES, 0);
			b->stats.nr_syscalls++;
		} while (n < 0 && errno == EINTR);
		b->stats.nr_reads++;
		file_finish(f, n < 0 ? -errno : n);
	}
}

/*
 * One IORING_OP_READ per open file, then one io_uring_enter(2) that submits
 * them all and waits for every completion. Another enter happens only when
 * a wait was interrupted or returned early.
 */
static gboolean run_uring(struct vr_read_batch *b, GError **error)
{
	GHashTableIter it;
	gpointer v;
	guint nr_queued = 0, nr_done = 0, nr_eagain = 0;

	g_hash_table_iter_init(&it, b->files);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		struct batch_file *f = v;
		struct io_uring_sqe *sqe;

		if (f->fd < 0 || f->skip)
			continue;
		/* ring_fit() made the ring as big as the batch */
		sqe = io_uring_get_sqe(&b->ring);
		if (!sqe) {
			g_set_error(error, VR_READ_BATCH_ERROR, VR_READ_BATCH_ERROR_URING,
				    "the io_uring queue of %u entries is full", b->ring_entries);
			return FALSE;
		}
		io_uring_prep_read(sqe, f->fd, f->buf, READ_SIZE_BYTES, 0);
		io_uring_sqe_set_data(sqe, f);
		nr_queued++;
	}
	b->stats.nr_reads += nr_queued;
	while (nr_done < nr_queued) {
		struct io_uring_cqe *cqe;
		int ret;

		if (io_uring_peek_cqe(&b->ring, &cqe) == 0) {
			struct batch_file *f = io_uring_cqe_get_data(cqe);

			file_finish(f, cqe->res);
			io_uring_cqe_seen(&b->ring, cqe);
			nr_done++;
			continue;
		}
		/* submits what is still queued, waits for what is in flight */
		ret = io_uring_submit_and_wait(&b->ring, nr_queued - nr_done);
		b->stats.nr_syscalls++;
		if (ret == -EAGAIN && ++nr_eagain < VR_READ_BATCH_MAX_EAGAIN)
			continue;
		if (ret < 0 && ret != -EINTR) {
			g_set_error(error, VR_READ_BATCH_ERROR, VR_READ_BATCH_ERROR_URING,
				    "io_uring failed after %u of %u reads: %s", nr_done, nr_queued,
				    g_strerror(-ret));
			return FALSE;
		}
	}
	return TRUE;
}

gboolean vr_read_batch_set_skip(struct vr_read_batch *b, guint id, gboolean skip)
{
	struct batch_file *f = lookup(b, id);

	if (!f)
		return FALSE;
	f->skip = skip;
	return TRUE;
}

gboolean vr_read_batch_run(struct vr_read_batch *b, GError **error)
{
	g_autoptr(GError) uring_error = NULL;
	GHashTableIter it;
	gpointer v;

	b->stats.nr_runs++;
	if (!b->use_uring) {
		run_pread(b);
		return TRUE;
	}
	if (run_uring(b, &uring_error))
		return TRUE;
	/* Reads may still be in flight into the buffers: closing the ring
	 * cancels them, and the buffers stay allocated with their files. */
	g_warning("%s; reading procfs files with pread(2) from now on", uring_error->message);
	drop_uring(b);
	g_hash_table_iter_init(&it, b->files);
	while (g_hash_table_iter_next(&it, NULL, &v))
		set_file_error(v, g_error_copy(uring_error));
	g_propagate_error(error, g_steal_pointer(&uring_error));
	return FALSE;
}

const char *vr_read_batch_text(struct vr_read_batch *b, guint id, gsize *len,
			       const GError **file_error)
{
	struct batch_file *f = lookup(b, id);

	if (len)
		*len = 0;
	if (!f) {
		g_clear_error(&b->lookup_error);
		b->lookup_error = g_error_new(VR_READ_BATCH_ERROR, VR_READ_BATCH_ERROR_NO_FILE,
					      "the batch has no file %u", id);
		if (file_error)
			*file_error = b->lookup_error;
		return NULL;
	}
	if (file_error)
		*file_error = f->error;
	if (f->error)
		return NULL;
	if (len)
		*len = f->len;
	return f->buf;
}

const char *vr_read_batch_path(const struct vr_read_batch *b, guint id)
{
	struct batch_file *f = lookup(b, id);

	return f ? f->path : NULL;
}

guint vr_read_batch_nr_files(const struct vr_read_batch *b)
{
	return g_hash_table_size(b->files);
}

void vr_read_batch_get_stats(const struct vr_read_batch *b, struct vr_read_batch_stats *out)
{
	*out = b->stats;
}
