/*
 * pause: the infra ("sandbox") container process of dockershim pods.
 *
 * It holds the pod's namespaces open and does nothing else:
 *   - blocks forever in pause();
 *   - reaps zombies on SIGCHLD (it is PID 1 when the pod shares a PID namespace);
 *   - exits 0 on SIGINT or SIGTERM;
 *   - `pause -v` prints its version and exits.
 *
 * Built statically by scripts/test-images.sh (not by CMake):
 *   gcc -static -Os -s -o pause tools/pause/pause.c
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PAUSE_VERSION
#define PAUSE_VERSION "3.10-dockershim"
#endif

static void on_term(int sig) {
  (void)sig;
  _exit(0);
}

static void on_child(int sig) {
  (void)sig;
  int saved = errno;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
  errno = saved;
}

static int install(int sig, void (*fn)(int), int flags) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = fn;
  sa.sa_flags = flags;
  sigemptyset(&sa.sa_mask);
  return sigaction(sig, &sa, NULL);
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--version") == 0) {
      printf("pause version %s\n", PAUSE_VERSION);
      return 0;
    }
    fprintf(stderr, "usage: %s [-v]\n", argv[0]);
    return 2;
  }
  if (getpid() != 1) {
    fprintf(stderr, "pause: warning: not running as PID 1\n");
  }
  if (install(SIGINT, on_term, 0) < 0 || install(SIGTERM, on_term, 0) < 0 ||
      install(SIGCHLD, on_child, SA_NOCLDSTOP | SA_RESTART) < 0) {
    perror("pause: sigaction");
    return 1;
  }
  for (;;) {
    pause();
  }
  /* not reached */
  fprintf(stderr, "pause: error: infinite loop terminated\n");
  return 42;
}
