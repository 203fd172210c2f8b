/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A batch of small files read together once a tick: the procfs files of every
 * managed domain (/proc/<pid>/status, smaps_rollup, stat) and the host's
 * (/proc/meminfo, /proc/pressure/memory). Files stay open from
 * vr_read_batch_add() to vr_read_batch_remove(); each run reads every file
 * from offset 0 again (procfs seq_files regenerate their text for a read at
 * offset 0), with io_uring (one IORING_OP_READ per file, one submit and one
 * wait for the whole batch) or, where io_uring is not available, one
 * pread(2) per file.
 *
 * An open /proc/<pid>/... file stays bound to the process it was opened for:
 * when that process exits, its files fail with VR_READ_BATCH_ERROR_GONE and
 * never read another process that reuses the pid. When the caller knows a
 * domain's process changed, it reopens the domain's files
 * (vr_read_batch_reopen()). A regular file removed while open keeps being
 * read through its open descriptor (POSIX semantics); reopening it fails.
 *
 * Each read asks for VR_READ_BATCH_MAX_BYTES + 1 bytes and takes what one read
 * returns as the whole file: true of regular files and of procfs seq_files,
 * which fill the buffer until their text ends. A read that fills all
 * VR_READ_BATCH_MAX_BYTES + 1 bytes is a file too long.
 *
 * Not thread-safe: one thread owns a batch.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

/* Largest file a batch reads, bytes. /proc/<pid>/status is about 1.5 KiB,
 * smaps_rollup 0.7 KiB, stat 0.3 KiB, /proc/meminfo 1.5 KiB: 64 KiB leaves
 * room for kernels with many more fields. */
#define VR_READ_BATCH_MAX_BYTES (64 * 1024)

/* Most files in one batch (4 per domain: about 1000 domains). Bounds the
 * buffers (64 KiB each, touched only as far as a file's text goes) and the
 * io_uring queue, which holds the whole batch at once. */
#define VR_READ_BATCH_MAX_FILES 4096

#define VR_READ_BATCH_ERROR (vr_read_batch_error_quark())
GQuark vr_read_batch_error_quark(void);

/**
 * enum vr_read_batch_error - error codes in the VR_READ_BATCH_ERROR domain.
 * @VR_READ_BATCH_ERROR_GONE:	  the file does not exist (ENOENT) or its
 *				  process has exited (ESRCH).
 * @VR_READ_BATCH_ERROR_IO:	  any other failure to open or read a file.
 * @VR_READ_BATCH_ERROR_TOO_LONG: the file is longer than
 *				  VR_READ_BATCH_MAX_BYTES.
 * @VR_READ_BATCH_ERROR_NOT_READ: the file has not been read since it was
 *				  added or reopened.
 * @VR_READ_BATCH_ERROR_NO_FILE:  no file has that id, or the batch is full.
 * @VR_READ_BATCH_ERROR_URING:	  io_uring itself failed (setup or a submit).
 */
enum vr_read_batch_error {
	VR_READ_BATCH_ERROR_GONE,
	VR_READ_BATCH_ERROR_IO,
	VR_READ_BATCH_ERROR_TOO_LONG,
	VR_READ_BATCH_ERROR_NOT_READ,
	VR_READ_BATCH_ERROR_NO_FILE,
	VR_READ_BATCH_ERROR_URING,
};

/**
 * struct vr_read_batch_stats - what a batch's runs cost, cumulative.
 * @nr_runs:	 vr_read_batch_run() calls.
 * @nr_reads:	 file reads issued (files that are open, once per run).
 * @nr_syscalls: system calls the runs made: one pread(2) per read without
 *		 io_uring; the io_uring_enter(2) calls with it (one per run
 *		 when every completion is there after the first wait).
 */
struct vr_read_batch_stats {
	uint64_t nr_runs;
	uint64_t nr_reads;
	uint64_t nr_syscalls;
};

struct vr_read_batch;
typedef struct vr_read_batch vr_read_batch;

/**
 * vr_read_batch_new() - an empty batch.
 * @use_uring:	read with io_uring. When io_uring cannot be set up (ENOSYS: a
 *		kernel without it; EPERM: disabled by sysctl or seccomp; ENOMEM:
 *		no memory for its rings) the batch says so once at g_message
 *		level and reads with pread(2) instead. FALSE: pread(2) always.
 * Return: owned batch (vr_read_batch_free()), or NULL with @error
 * (VR_READ_BATCH_ERROR_URING) when io_uring fails for another reason.
 */
struct vr_read_batch *vr_read_batch_new(gboolean use_uring, GError **error);

/** vr_read_batch_free() - close every file and free @b (NULL is fine). */
void vr_read_batch_free(struct vr_read_batch *b);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(vr_read_batch, vr_read_batch_free)

/**
 * vr_read_batch_uses_uring() - does @b read with io_uring? FALSE when it was
 * created without, fell back at setup, or io_uring failed in a run.
 */
gboolean vr_read_batch_uses_uring(const struct vr_read_batch *b);

/**
 * vr_read_batch_add() - open @path (the caller's procfs root included) and
 * add it to the batch. It is read from the next run on; until then its text
 * is VR_READ_BATCH_ERROR_NOT_READ.
 * Return: the file's id (> 0, never reused by this batch), or 0 with @error
 * naming @path: VR_READ_BATCH_ERROR_GONE (ENOENT, ESRCH),
 * VR_READ_BATCH_ERROR_IO (other open errors) or VR_READ_BATCH_ERROR_NO_FILE
 * (the batch holds VR_READ_BATCH_MAX_FILES already).
 */
guint vr_read_batch_add(struct vr_read_batch *b, const char *path, GError **error);

/**
 * vr_read_batch_remove() - close file @id and forget it; its text is gone.
 * Return: FALSE when @b has no file @id.
 */
gboolean vr_read_batch_remove(struct vr_read_batch *b, guint id);

/**
 * vr_read_batch_reopen() - close file @id and open its path again: for a
 * /proc/<pid>/... file whose process the caller knows changed. Its text is
 * VR_READ_BATCH_ERROR_NOT_READ until the next run.
 * Return: FALSE with @error naming the path when it cannot be opened (the
 * file stays in the batch, failing with that error at every run until a
 * reopen succeeds or it is removed) or @b has no file @id.
 */
gboolean vr_read_batch_reopen(struct vr_read_batch *b, guint id, GError **error);

/**
 * vr_read_batch_set_skip() - leave file @id out of the runs from now on
 * (@skip) or read it again (the default): a skipped file keeps the text (or
 * the error) of the last run that read it. For files whose reader needs
 * them less often than every run.
 * Return: FALSE when @b has no file @id.
 */
gboolean vr_read_batch_set_skip(struct vr_read_batch *b, guint id, gboolean skip);

/**
 * vr_read_batch_run() - read every file of @b again (but the skipped ones). A file that fails
 * (its process gone, too long, an I/O error) gets its own error and the
 * others are still read. With io_uring: one submit for the whole batch.
 * Return: FALSE with @error (VR_READ_BATCH_ERROR_URING) only when io_uring
 * itself fails: every file then holds that error for this run, and later
 * runs use pread(2) (said once at g_warning level).
 */
gboolean vr_read_batch_run(struct vr_read_batch *b, GError **error);

/**
 * vr_read_batch_text() - file @id's text as the last run read it.
 * @len:	when not NULL, set to the text's length in bytes (0 on error).
 * @file_error:	when not NULL, set to NULL on success, or to why there is no
 *		text: the file's error from the last run (or its failed
 *		reopen), VR_READ_BATCH_ERROR_NOT_READ, or
 *		VR_READ_BATCH_ERROR_NO_FILE for an unknown @id. Owned by @b:
 *		valid until the next run, reopen or remove of the file (for an
 *		unknown @id, until the next such call). Messages name the path.
 * Return: the NUL-terminated text (owned by @b, valid until the next run,
 * reopen or remove of the file, or vr_read_batch_free()), or NULL.
 */
const char *vr_read_batch_text(struct vr_read_batch *b, guint id, gsize *len,
			       const GError **file_error);

/**
 * vr_read_batch_path() - the path file @id was added with (owned by @b), or
 * NULL for an unknown @id.
 */
const char *vr_read_batch_path(const struct vr_read_batch *b, guint id);

/** vr_read_batch_nr_files() - how many files @b holds. */
guint vr_read_batch_nr_files(const struct vr_read_batch *b);

/** vr_read_batch_get_stats() - @b's cumulative costs into @out. */
void vr_read_batch_get_stats(const struct vr_read_batch *b, struct vr_read_batch_stats *out);
