/* Files: the one atomic way every output is written (temp file beside the
 * target, write-error check, fsync, rename), the checks of output paths
 * made before any work, mkdir -p, and reading an input file whole.
 * Contracts in file.h. */
#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/interrupt.h"

/* Tells apart the temp and probe files of one process's threads. */
static atomic_uint file_counter;

/* The directory part of `path` as a new string: "." when there is none,
 * "/" for "/name". NULL when out of memory. */
static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return strdup(".");
  if (slash == path) return strdup("/");
  return strndup(path, (size_t)(slash - path));
}

/* "cannot write WHAT to PATH" or "cannot write PATH" into buf, the start of
 * every write error of an output handle. */
static const char *write_subject(char *buf, size_t size, const char *what, const char *path) {
  if (!path) path = "standard output";
  if (what)
    snprintf(buf, size, "cannot write %s to %s", what, path);
  else
    snprintf(buf, size, "cannot write %s", path);
  return buf;
}

/* mkdir -p of `dir`; errors start with `prefix`. */
static gs_status make_dirs(const char *dir, const char *prefix) {
  char *copy = strdup(dir);
  if (!copy) return gs_error(GS_ERR_NOMEM, "%s: out of memory", prefix);
  gs_status st = GS_OK;
  for (char *p = copy + 1; st == GS_OK; p++) {
    if (*p != '/' && *p != '\0') continue;
    char saved = *p;
    *p = '\0';
    struct stat sb;
    if (mkdir(copy, 0777) != 0 && errno != EEXIST)
      st = gs_error(GS_ERR_IO, "%s: cannot create the directory %s: %s", prefix, copy,
                    strerror(errno));
    else if (stat(copy, &sb) != 0 || !S_ISDIR(sb.st_mode))
      st = gs_error(GS_ERR_IO, "%s: %s exists and is not a directory", prefix, copy);
    *p = saved;
    if (saved == '\0') break;
  }
  free(copy);
  return st;
}

/* See file.h. */
gs_status gs_file_make_dirs(const char *dir, const char *what) {
  if (!dir || !dir[0]) return gs_error(GS_ERR_USAGE, "%s: empty directory name", what);
  return make_dirs(dir, what);
}

/* ---- checking an output before any work --------------------------------- */

/* Creates and removes a probe file in the directory `dir`: the one sure
 * test that files can be created there (permissions, ACLs, read-only file
 * systems, a full inode table). Returns 0 or the errno. */
static int probe_dir(const char *dir) {
  size_t size = strlen(dir) + 64;
  char *probe = malloc(size);
  if (!probe) return ENOMEM;
  snprintf(probe, size, "%s/.gpuscale-probe.%ld.%u", dir, (long)getpid(),
           atomic_fetch_add(&file_counter, 1));
  int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    close(fd);
    unlink(probe);
  }
  free(probe);
  return err;
}

/* Checks that `dir` is, or can be created as, a directory in which files
 * can be created: walks up to the nearest existing ancestor, which must be
 * a directory, and probes it (mkdir needs the same right there). */
static gs_status check_dir_writable(const char *dir, const char *option, const char *path) {
  char *d = strdup(dir);
  if (!d) return gs_error(GS_ERR_NOMEM, "%s: out of memory", option);
  gs_status st = GS_OK;
  for (;;) {
    struct stat sb;
    if (stat(d, &sb) == 0) {
      if (!S_ISDIR(sb.st_mode)) {
        st = gs_error(GS_ERR_IO, "%s: cannot write %s: %s is not a directory", option, path, d);
      } else {
        int err = probe_dir(d);
        if (err)
          st = gs_error(GS_ERR_IO, "%s: cannot write %s: cannot create files in %s: %s", option,
                        path, d, strerror(err));
      }
      break;
    }
    int root = strcmp(d, ".") == 0 || strcmp(d, "/") == 0;
    if ((errno != ENOENT && errno != ENOTDIR) || root) {
      st = gs_error(GS_ERR_IO, "%s: cannot write %s: %s: %s", option, path, d, strerror(errno));
      break;
    }
    // Missing (or under a non-directory, found further up): try the parent.
    char *slash = strrchr(d, '/');
    while (slash && slash > d && slash[-1] == '/') slash--;
    if (!slash) {
      d[0] = '.';
      d[1] = '\0';
    } else if (slash == d) {
      d[1] = '\0';
    } else {
      *slash = '\0';
    }
  }
  free(d);
  return st;
}

/* See file.h. */
gs_status gs_file_check_output(const char *path, const char *option) {
  if (!path || !path[0]) return gs_error(GS_ERR_USAGE, "%s: empty file name", option);
  struct stat sb;
  if (stat(path, &sb) == 0) {
    if (S_ISDIR(sb.st_mode))
      return gs_error(GS_ERR_USAGE, "%s: %s is a directory; give a file name", option, path);
    if (!S_ISREG(sb.st_mode)) {
      if (access(path, W_OK) != 0)
        return gs_error(GS_ERR_IO, "%s: cannot write %s: %s", option, path, strerror(errno));
      return GS_OK;
    }
  } else if (errno == ELOOP) {
    // Writing would replace the link by a file without a word.
    return gs_error(GS_ERR_USAGE, "%s: %s is a symbolic link that loops (%s): remove it or give "
                    "another file", option, path, strerror(ELOOP));
  } else if (path[strlen(path) - 1] == '/') {
    return gs_error(GS_ERR_USAGE, "%s: %s ends in '/'; give a file name", option, path);
  }
  char *dir = dir_of(path);
  if (!dir) return gs_error(GS_ERR_NOMEM, "%s: out of memory", option);
  gs_status st = check_dir_writable(dir, option, path);
  free(dir);
  return st;
}

/* See file.h. */
gs_status gs_file_check_output_dir(const char *dir, const char *option) {
  if (!dir || !dir[0]) return gs_error(GS_ERR_USAGE, "%s: empty directory name", option);
  struct stat sb;
  if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
    return gs_error(GS_ERR_USAGE, "%s: %s exists and is not a directory", option, dir);
  return check_dir_writable(dir, option, dir);
}

/* ---- writing atomically ------------------------------------------------- */

/* fsync of the directory makes the rename itself durable. */
static gs_status sync_parent_dir(const char *path) {
  char *dir = dir_of(path);
  if (!dir) return gs_error(GS_ERR_NOMEM, "out of memory writing %s", path);
  gs_status st = GS_OK;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    st = gs_error(GS_ERR_IO, "cannot sync directory of %s: %s", path, strerror(errno));
  } else {
    // Some file systems cannot fsync a directory; the rename stands anyway.
    if (fsync(fd) != 0 && errno != EINVAL && errno != ENOTSUP)
      st = gs_error(GS_ERR_IO, "cannot sync directory of %s: %s", path, strerror(errno));
    close(fd);
  }
  free(dir);
  return st;
}

/* The file that `path` names after following symlinks (at most 40), as a
 * new string; `path` itself when it is no link. NULL when out of memory.
 * A dangling link yields its target, which the rename then creates. */
static char *follow_links(const char *path) {
  char *cur = strdup(path);
  for (int hops = 0; cur && hops < 40; hops++) {
    struct stat sb;
    if (lstat(cur, &sb) != 0 || !S_ISLNK(sb.st_mode)) break;
    char target[4096];
    ssize_t n = readlink(cur, target, sizeof target - 1);
    if (n <= 0) break;
    target[n] = '\0';
    char *next = NULL;
    if (target[0] == '/') {
      next = strdup(target);
    } else {
      char *dir = dir_of(cur);
      size_t size = dir ? strlen(dir) + (size_t)n + 2 : 0;
      next = dir ? malloc(size) : NULL;
      if (next) snprintf(next, size, "%s/%s", dir, target);
      free(dir);
    }
    free(cur);
    cur = next;
  }
  return cur;
}

static void out_release(gs_file_out *out) {
  gs_interrupt_untrack(out->tracked - 1);
  out->tracked = 0;
  free(out->path);
  free(out->tmp);
  out->path = out->tmp = NULL;
  out->f = NULL;
}

/* Opens a device or FIFO directly: there is no file to replace. */
static gs_status open_special(gs_file_out *out) {
  char subject[512];
  out->f = fopen(out->path, "w");
  if (out->f) return GS_OK;
  gs_status st = gs_error(GS_ERR_IO, "%s: %s",
                          write_subject(subject, sizeof subject, out->what, out->path),
                          strerror(errno));
  out_release(out);
  return st;
}

/* See file.h. */
gs_status gs_file_out_open(gs_file_out *out, const char *path, const char *what) {
  memset(out, 0, sizeof *out);
  out->what = what;
  if (!path) {
    out->f = stdout;
    return GS_OK;
  }
  if (!path[0]) GS_BUG("gs_file_out_open: empty path");
  char subject[512];
  write_subject(subject, sizeof subject, what, path);

  // Replace what a symlink points to, not the link itself.
  out->path = follow_links(path);
  struct stat sb;
  if (!out->path) return gs_error(GS_ERR_NOMEM, "%s: out of memory", subject);
  int exists = stat(out->path, &sb) == 0;
  if (exists && S_ISDIR(sb.st_mode)) {
    out_release(out);
    return gs_error(GS_ERR_IO, "%s: it is a directory", subject);
  }
  if (exists && !S_ISREG(sb.st_mode)) return open_special(out);
  out->target_existed = exists;
  out->target_dev = exists ? (unsigned long long)sb.st_dev : 0;
  out->target_ino = exists ? (unsigned long long)sb.st_ino : 0;

  char *dir = dir_of(out->path);
  gs_status st = dir ? make_dirs(dir, subject) : gs_error(GS_ERR_NOMEM, "%s: out of memory", subject);
  free(dir);
  size_t tmp_size = strlen(out->path) + 48;
  if (st == GS_OK && !(out->tmp = malloc(tmp_size)))
    st = gs_error(GS_ERR_NOMEM, "%s: out of memory", subject);
  if (st != GS_OK) {
    out_release(out);
    return st;
  }
  snprintf(out->tmp, tmp_size, "%s.tmp.%ld.%u", out->path, (long)getpid(),
           atomic_fetch_add(&file_counter, 1));
  // A signal that ends the process removes it (core/interrupt.c): tracked
  // before it exists, so that no signal finds it created but untracked.
  out->tracked = gs_interrupt_track(out->tmp) + 1;
  int fd = open(out->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0 && errno == EEXIST) {
    // Left by an earlier process with our pid that died mid-write.
    unlink(out->tmp);
    fd = open(out->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  }
  if (fd < 0) {
    st = gs_error(GS_ERR_IO, "%s: cannot create %s: %s", subject, out->tmp, strerror(errno));
    out_release(out);
    return st;
  }
  // The replacement keeps the permissions of the file it replaces.
  if (exists) (void)fchmod(fd, sb.st_mode & 07777);
  out->f = fdopen(fd, "w");
  if (!out->f) {
    st = gs_error(GS_ERR_IO, "%s: %s", subject, strerror(errno));
    close(fd);
    unlink(out->tmp);
    out_release(out);
  }
  return st;
}

/* What `path` (links followed) is against the known `stamp`: 1 the file
 * it recorded, 2 another file, 0 no file; -1 out of memory. */
static int stamp_state(const gs_file_stamp *stamp, const char *path) {
  char *target = follow_links(path);
  if (!target) return -1;
  struct stat sb;
  const int found = stat(target, &sb) == 0;
  free(target);
  if (!found) return 0;
  return (unsigned long long)sb.st_dev == stamp->dev &&
                 (unsigned long long)sb.st_ino == stamp->ino
             ? 1
             : 2;
}

/* See file.h. */
int gs_file_stamp_names(const gs_file_stamp *stamp, const char *path) {
  return stamp->known && stamp_state(stamp, path) == 1;
}

/* See file.h. */
gs_status gs_file_out_reopen(gs_file_out *out, const char *path, const char *what,
                             gs_file_stamp *stamp) {
  if (!path || !stamp) GS_BUG("gs_file_out_reopen: no path or no stamp");
  if (stamp->known) {
    const int state = stamp_state(stamp, path);
    if (state < 0) return gs_error(GS_ERR_NOMEM, "%s: out of memory", path);
    // A file removed meanwhile is no newer version: the write goes ahead.
    if (state == 2) {
      char subject[512];
      return gs_error(GS_ERR_IO,
                      "%s: another process replaced it since this one last wrote it; its "
                      "version is kept",
                      write_subject(subject, sizeof subject, what, path));
    }
  }
  const gs_status st = gs_file_out_open(out, path, what);
  if (st == GS_OK) out->stamp = stamp;
  return st;
}

/* Why an earlier write to the temp file `fd` failed, when stdio kept only
 * its error flag: one more byte written at the end fails the same way (a
 * full disk, a file-size limit). The temp file is removed anyway. -1 when
 * the write now succeeds (the reason passed). */
static int write_error_reason(int fd) {
  off_t end = lseek(fd, 0, SEEK_END);
  const char byte = 0;
  if (end < 0) return errno;
  return pwrite(fd, &byte, 1, end) < 0 ? errno : -1;
}

/* See file.h. */
gs_status gs_file_out_commit(gs_file_out *out) {
  if (!out->f) GS_BUG("gs_file_out_commit: the file is not open");
  char subject[512];
  write_subject(subject, sizeof subject, out->what, out->path);
  // A write that failed earlier set the stream's error flag; its errno is
  // gone, but a flush of what is still buffered usually tells it again.
  errno = 0;
  int err = 0;
  if (fflush(out->f) != 0)
    err = errno ? errno : EIO;
  else if (ferror(out->f))
    err = out->tmp ? write_error_reason(fileno(out->f)) : -1;
  else if (out->tmp && fsync(fileno(out->f)) != 0)
    err = errno;
  // The rename keeps the temp file's inode: what the stamp will name.
  struct stat written;
  const int stamped = !err && out->stamp && out->tmp && fstat(fileno(out->f), &written) == 0;
  if (out->f != stdout && fclose(out->f) != 0 && !err) err = errno ? errno : EIO;
  out->f = NULL;
  // Another process replaced the file while this one wrote (a rank that
  // took over writing while this one was stopped mid-write): its version is
  // newer, and a rename now would put the older one back.
  int replaced = 0;
  if (!err && out->tmp) {
    struct stat now;
    const int exists = stat(out->path, &now) == 0;
    // A file removed meanwhile is no newer version: the rename goes ahead.
    replaced = exists && (!out->target_existed ||
                          (unsigned long long)now.st_dev != out->target_dev ||
                          (unsigned long long)now.st_ino != out->target_ino);
  }
  if (!err && out->tmp && !replaced && rename(out->tmp, out->path) != 0) err = errno;
  gs_status st = GS_OK;
  if (replaced) {
    unlink(out->tmp);
    st = gs_error(GS_ERR_IO,
                  "%s: another process replaced it while this one wrote; its version is kept",
                  subject);
  } else if (err) {
    if (out->tmp) unlink(out->tmp);
    st = gs_error(GS_ERR_IO, "%s: %s", subject, err > 0 ? strerror(err) : "write error");
  } else if (out->tmp) {
    st = sync_parent_dir(out->path);
    if (stamped)
      *out->stamp = (gs_file_stamp){.known = 1,
                                    .dev = (unsigned long long)written.st_dev,
                                    .ino = (unsigned long long)written.st_ino};
  }
  out_release(out);
  return st;
}

/* See file.h. */
void gs_file_out_abort(gs_file_out *out) {
  if (out->f && out->f != stdout) {
    fclose(out->f);
    if (out->tmp) unlink(out->tmp);
  }
  out_release(out);
}

/* See file.h. */
gs_status gs_file_out_finish(gs_file_out *out, gs_status st) {
  // A renderer's write error is in the stream: commit reports it (and
  // removes the temp file) with the reason a flush gives.
  if (st == GS_OK || (st == GS_ERR_IO && out->f && ferror(out->f)))
    return gs_file_out_commit(out);
  if (st == GS_ERR_IO) {
    char subject[512];
    gs_error(st, "%s: write error", write_subject(subject, sizeof subject, out->what, out->path));
  }
  gs_file_out_abort(out);
  return st;
}

/* See file.h. */
gs_status gs_file_write_atomic(const char *path, const void *data, size_t size, const char *what) {
  gs_file_out out;
  gs_status st = gs_file_out_open(&out, path, what);
  if (st != GS_OK) return st;
  if (size > 0) fwrite(data, 1, size, out.f);  // a short write sets the error flag
  return gs_file_out_commit(&out);
}

/* ---- reading ------------------------------------------------------------ */

/* See file.h. */
gs_status gs_file_read(const char *path, uint64_t max_bytes, const char *what, char **data_out,
                       size_t *size_out) {
  // Opened without blocking: a FIFO or a device must be refused below, not
  // wait in open() for a writer that never comes.
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return gs_error(GS_ERR_IO, "cannot read %s: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    return gs_error(GS_ERR_IO, "cannot read %s: %s", path, strerror(e));
  }
  if (!S_ISREG(sb.st_mode)) {
    close(fd);
    return gs_error(GS_ERR_IO, "cannot read %s: %s", path,
                    S_ISDIR(sb.st_mode) ? "is a directory" : "not a regular file");
  }
  if ((uint64_t)sb.st_size > max_bytes) {
    close(fd);
    int gib = max_bytes % ((uint64_t)1 << 30) == 0;
    return gs_error(GS_ERR_FORMAT, "%s is %llu bytes; %s larger than %llu %s (%llu bytes) are refused",
                    path, (unsigned long long)sb.st_size, what,
                    (unsigned long long)(max_bytes >> (gib ? 30 : 20)), gib ? "GiB" : "MiB",
                    (unsigned long long)max_bytes);
  }
  size_t size = (size_t)sb.st_size;
  char *data = malloc(size + 1);
  if (!data) {
    close(fd);
    return gs_error(GS_ERR_NOMEM, "out of memory reading %s (%zu bytes)", path, size);
  }
  size_t got = 0;
  while (got < size) {
    ssize_t n = read(fd, data + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      free(data);
      close(fd);
      return gs_error(GS_ERR_IO, "cannot read %s: %s", path, strerror(e));
    }
    if (n == 0) break;  // file shrank while we read it: parse what is there
    got += (size_t)n;
  }
  close(fd);
  data[got] = '\0';
  *data_out = data;
  *size_out = got;
  return GS_OK;
}

/* Whether `a` and `b` are one existing file. */
static int same_file(const char *a, const char *b) {
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

gs_status gs_file_check_not_input(const char *out, const char *input, const char *const *names,
                                  const char *option) {
  struct stat st;
  if (stat(input, &st) == 0 && S_ISDIR(st.st_mode)) {
    for (size_t i = 0; names && names[i]; i++) {
      char inside[4096];
      if ((size_t)snprintf(inside, sizeof inside, "%s/%s", input, names[i]) >= sizeof inside)
        continue;
      if (same_file(out, inside))
        return gs_error(GS_ERR_USAGE, "%s: '%s' is the input %s: writing it would destroy what "
                        "is read; choose another file", option, out, inside);
    }
    return GS_OK;
  }
  if (same_file(out, input))
    return gs_error(GS_ERR_USAGE, "%s: '%s' is also an input of this command ('%s'): writing it "
                    "would destroy what is read; choose another file", option, out, input);
  return GS_OK;
}
