/* Files the tool reads and writes. Every output file goes through one
 * atomic path: bytes go to a temp file in the target's directory, which is
 * flushed, checked for write errors, fsync'ed and renamed over the target
 * only when everything was written. A full disk or any write error leaves
 * the old file untouched and no temp file behind. Commands check their
 * output paths before doing any work (gs_file_check_output). */
#ifndef GS_FILE_H
#define GS_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/status.h"

/* Checks, before any work is done, that the file `path` can be written
 * later: the path is not empty and not a directory; its parent directory
 * exists or can be created (the nearest existing ancestor is a directory);
 * and a file can be created in that directory (a probe file is created and
 * removed at once; nothing else is created, no directory either). An
 * existing device or FIFO (e.g. /dev/null) only needs to be writable.
 * `option` names the path as the user gave it, e.g. "option --out"; every
 * message starts with it and names `path`.
 * Returns GS_OK; GS_ERR_USAGE when `path` is empty, is a directory or is
 * a symbolic link that loops;
 * GS_ERR_IO when the file system refuses (a component is not a directory,
 * no permission, read-only, no space for a file). Records the error with
 * gs_error. Takes a few system calls: call it right after
 * parsing the options. Any thread; no shared state. */
gs_status gs_file_check_output(const char *path, const char *option);

/* Refuses (GS_ERR_USAGE naming `option`) an output `out` that is the file
 * `input` the command reads (the same device and inode, whatever the
 * spelling or a symlink), which writing would destroy. A directory
 * `input` (a LoadGen output) stands for the files `names` in it
 * (NULL-terminated, may be NULL). Call with the outputs' checks, before
 * reading anything. */
gs_status gs_file_check_not_input(const char *out, const char *input, const char *const *names,
                                  const char *option);

/* Like gs_file_check_output for an output directory `dir` (files will be
 * written inside it): it is a directory or can be created, and a file can
 * be created in it. GS_ERR_USAGE when `dir` is empty or exists and is not
 * a directory; GS_ERR_IO as above. */
gs_status gs_file_check_output_dir(const char *dir, const char *option);

/* Creates the directory `dir` and its missing parents (mkdir -p); an
 * existing directory is fine. GS_ERR_IO naming the component that could
 * not be created or is not a directory, prefixed with `what` (e.g.
 * "option --plots"). */
gs_status gs_file_make_dirs(const char *dir, const char *what);

/* Which file a path named when this process last committed it: the
 * device and inode its rename left there. */
typedef struct {
  int known;                   /* 0 until a commit recorded it */
  unsigned long long dev, ino;
} gs_file_stamp;

/* An output file being written (gs_file_out_open ... commit or abort).
 * Write through `f` only; the other members are private. */
typedef struct {
  FILE *f;
  char *path;        /* the file replaced on commit (a symlink's target);
                        NULL for standard output */
  char *tmp;         /* the temp file beside it; NULL when writing straight
                        to a device or FIFO */
  const char *what;  /* for messages; not owned */
  int tracked;       /* gs_interrupt_track's slot + 1 of tmp; 0: none */
  int target_existed;                /* path was a file when opened */
  unsigned long long target_dev, target_ino; /* which file it was then */
  gs_file_stamp *stamp;              /* gs_file_out_reopen's, set on commit */
} gs_file_out;

/* Opens `path` for writing, or standard output when `path` is NULL (then
 * commit only flushes and checks it). For a file: creates missing parent directories and a new
 * temp file "PATH.tmp.PID.N" in the same directory, with the mode of the
 * file it replaces (0666 less the umask for a new file). A symlink is
 * followed: the file it points to is replaced. A device or FIFO is opened
 * directly (nothing to replace). `what` names the content in messages
 * ("cannot write WHAT to PATH: reason"), e.g. "the report"; NULL gives
 * "cannot write PATH: reason"; it must outlive `out`.
 * On error `out` holds nothing to commit or abort (both are no-ops).
 * Errors: GS_ERR_IO (path is a directory, cannot create the directories or
 * the temp file), GS_ERR_NOMEM. */
gs_status gs_file_out_open(gs_file_out *out, const char *path, const char *what);

/* Like gs_file_out_open, for a file this process writes again and again (a
 * measuring command's document after every measurement). `stamp` says
 * which file this process's last commit left at `path` (known 0 before
 * the first commit). When `path` now names another file, another process
 * replaced it since (a rank that took over the writing while this one was
 * stopped): that version is newer and is kept, nothing is opened, and
 * GS_ERR_IO says so. A commit records the new file in `stamp`, which must
 * outlive `out`. */
gs_status gs_file_out_reopen(gs_file_out *out, const char *path, const char *what,
                             gs_file_stamp *stamp);

/* 1 when `path` (a symlink followed) is the file that `stamp` recorded:
 * this process's last commit through gs_file_out_reopen left it there and
 * no other file has replaced it since; 0 when the stamp is not known, no
 * file is there, another is, or memory runs out. */
int gs_file_stamp_names(const gs_file_stamp *stamp, const char *path);

/* Finishes `out`: flushes, checks that no write failed, fsyncs, closes and
 * renames the temp file over the target, then fsyncs the directory. On any
 * error the temp file is removed and the old file is left as it was;
 * GS_ERR_IO names the path and the reason ("File too large", "No space
 * left on device"). Always releases `out`. */
gs_status gs_file_out_commit(gs_file_out *out);

/* Drops `out` without touching the target: closes and removes the temp
 * file. For a caller whose content failed (e.g. out of memory rendering).
 * Safe on a zeroed, failed-open or already committed handle. */
void gs_file_out_abort(gs_file_out *out);

/* Ends an output that a renderer wrote into `out->f` and that returned
 * `st`: commits it when st is GS_OK; when st is GS_ERR_IO (a write failed)
 * records "cannot write WHAT to PATH: reason" and removes the temp file;
 * with any other status only aborts (the caller reports that status).
 * Returns the final status; `out` is always released. */
gs_status gs_file_out_finish(gs_file_out *out, gs_status st);

/* Writes `size` bytes of `data` to `path` atomically (gs_file_out_open +
 * commit); `what` as there. On error the old file is untouched. */
gs_status gs_file_write_atomic(const char *path, const void *data, size_t size, const char *what);

/* Reads the regular file `path` whole into a NUL-terminated buffer that
 * the caller frees; `*size_out` excludes the terminator. Files larger than
 * `max_bytes` are refused ("WHAT larger than N bytes are refused"). Every
 * error names `path`. */
gs_status gs_file_read(const char *path, uint64_t max_bytes, const char *what, char **data_out,
                       size_t *size_out);

#endif
