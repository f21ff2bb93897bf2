/*
 * lectern-espeak: a separate helper program linked to libespeak-ng (GPL-3), so that
 * Lectern (Apache-2.0) talks to eSpeak NG over a pipe and never links GPL code into Node.
 *
 * Long-lived: reads requests on stdin, one after another, each a header line followed by
 * a body of exactly <nbytes> UTF-8 bytes:
 *   SYNTH <voice> <rate-wpm> <nbytes>\n<text>
 *   PHONEMIZE <voice> <nbytes>\n<text>
 *   VOICES\n
 * and answers with frames on stdout: 1 type byte, uint32 little-endian payload length, payload.
 *   'I' int32 sample rate                      (once, at start-up)
 *   'A' PCM16 little-endian mono samples
 *   'W' int32 text_position, length, audio_position_ms   (espeakEVENT_WORD; positions in characters, 1-based)
 *   'S' int32 text_position, audio_position_ms          (espeakEVENT_SENTENCE)
 *   'E' int32 text_position, audio_position_ms          (espeakEVENT_END, end of clause)
 *   'P' int32 audio_position_ms, then the IPA phoneme bytes (espeakEVENT_PHONEME)
 *   'C' int32 byte offset where the clause starts, int32 byte offset after it, then IPA bytes
 *   'V' one voice per line: identifier \t name \t languages as name:priority, comma-separated
 *       (a lower priority number means the voice is a better choice for that language)
 *   'X' error message (the request failed; the process stays usable)
 *   'D' end of the answer to one request
 */
#include <espeak-ng/speak_lib.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static void put_frame(char type, const void *data, uint32_t len) {
  unsigned char hdr[5];
  hdr[0] = (unsigned char)type;
  hdr[1] = len & 0xff;
  hdr[2] = (len >> 8) & 0xff;
  hdr[3] = (len >> 16) & 0xff;
  hdr[4] = (len >> 24) & 0xff;
  fwrite(hdr, 1, 5, stdout);
  if (len) fwrite(data, 1, len, stdout);
}

static void put_ints(char type, const int32_t *v, int n) { put_frame(type, v, (uint32_t)(n * 4)); }

static void put_error(const char *msg) {
  put_frame('X', msg, (uint32_t)strlen(msg));
  put_frame('D', NULL, 0);
  fflush(stdout);
}

static int on_synth(short *wav, int numsamples, espeak_EVENT *events) {
  if (wav && numsamples > 0) put_frame('A', wav, (uint32_t)numsamples * 2);
  for (espeak_EVENT *e = events; e && e->type != espeakEVENT_LIST_TERMINATED; e++) {
    switch (e->type) {
      case espeakEVENT_WORD: {
        int32_t v[3] = {e->text_position, e->length, e->audio_position};
        put_ints('W', v, 3);
        break;
      }
      case espeakEVENT_SENTENCE:
      case espeakEVENT_END: {
        int32_t v[2] = {e->text_position, e->audio_position};
        put_ints(e->type == espeakEVENT_SENTENCE ? 'S' : 'E', v, 2);
        break;
      }
      case espeakEVENT_PHONEME: {
        unsigned char buf[4 + 8];
        int32_t pos = e->audio_position;
        memcpy(buf, &pos, 4);
        size_t n = strnlen(e->id.string, 8);
        memcpy(buf + 4, e->id.string, n);
        put_frame('P', buf, (uint32_t)(4 + n));
        break;
      }
      default:
        break;
    }
  }
  return 0; /* 0 = continue synthesis */
}

static char *read_body(size_t n) {
  char *buf = malloc(n + 1);
  if (!buf) return NULL;
  if (n && fread(buf, 1, n, stdin) != n) {
    free(buf);
    return NULL;
  }
  buf[n] = 0;
  return buf;
}

static int set_voice(const char *voice) {
  if (espeak_SetVoiceByName(voice) == EE_OK) return 1;
  char msg[256];
  snprintf(msg, sizeof msg, "unknown eSpeak NG voice \"%s\"", voice);
  put_error(msg);
  return 0;
}

static void synth_here(const char *voice, int rate, char *text, size_t n) {
  if (!set_voice(voice)) return;
  espeak_SetParameter(espeakRATE, rate, 0);
  espeak_ERROR err = espeak_Synth(text, n + 1, 0, POS_CHARACTER, 0, espeakCHARS_UTF8, NULL, NULL);
  if (err != EE_OK) {
    put_error("espeak_Synth failed");
    return;
  }
  espeak_Synchronize();
  put_frame('D', NULL, 0);
  fflush(stdout);
}

/*
 * Each synthesis runs in a child forked from the process as it was before any synthesis, so the
 * same request always gives the same audio. eSpeak NG keeps state from one synthesis to the
 * next (the pitch flutter's index is a static in wavegen.c), so the second synthesis of a text
 * differed from the first from 15 ms in, and dtw's word times moved by 5-9 ms on average (up
 * to 70 ms) from one call to the next on the same audio, with what the helper had said before.
 * A fork costs about 3 ms; a new helper per synthesis 10-26. The child answers into a pipe and
 * its answer is passed on only once it has finished: one that dies mid-answer must not leave
 * half a frame on stdout, where the reader would wait for the rest.
 */
static void do_synth(const char *voice, int rate, char *text, size_t n) {
  fflush(stdout);
  int fds[2];
  if (pipe(fds) < 0) {
    put_error("cannot make a pipe for eSpeak NG synthesis");
    return;
  }
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    put_error("cannot fork for eSpeak NG synthesis");
    return;
  }
  if (pid == 0) {
    close(fds[0]);
    if (dup2(fds[1], STDOUT_FILENO) < 0) _exit(4);
    close(fds[1]);
    synth_here(voice, rate, text, n);
    fflush(stdout);
    _exit(0);
  }
  close(fds[1]);
  size_t cap = 1 << 16, len = 0;
  char *answer = malloc(cap);
  char scratch[4096];
  for (;;) {
    if (answer && len == cap) {
      char *grown = realloc(answer, cap * 2);
      if (!grown) {
        free(answer);
        answer = NULL;
      } else {
        answer = grown;
        cap *= 2;
      }
    }
    /* (out of memory: the rest is drained, so that the child can finish, and the request fails) */
    ssize_t got = answer ? read(fds[0], answer + len, cap - len) : read(fds[0], scratch, sizeof scratch);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    if (answer) len += (size_t)got;
  }
  close(fds[0]);
  int status = -1; /* stays -1 (not a clean exit) if waitpid fails: the request fails */
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (answer && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    fwrite(answer, 1, len, stdout);
    fflush(stdout);
  } else {
    put_error(answer ? "eSpeak NG synthesis stopped" : "out of memory for eSpeak NG synthesis");
  }
  free(answer);
}

static void do_phonemize(const char *voice, char *text, size_t n) {
  if (!set_voice(voice)) return;
  const void *p = text;
  const char *end = text + n;
  /* espeak_TextToPhonemes translates one clause per call and advances p past it. */
  while (p && (const char *)p < end) {
    const char *before = (const char *)p;
    const char *ph = espeak_TextToPhonemes(&p, espeakCHARS_UTF8, espeakPHONEMES_IPA);
    const char *after = p ? (const char *)p : end;
    size_t len = ph ? strlen(ph) : 0;
    unsigned char *buf = malloc(8 + len);
    if (!buf) break;
    int32_t a = (int32_t)(before - text), b = (int32_t)(after - text);
    memcpy(buf, &a, 4);
    memcpy(buf + 4, &b, 4);
    if (len) memcpy(buf + 8, ph, len);
    put_frame('C', buf, (uint32_t)(8 + len));
    free(buf);
    if (after <= before) break;
  }
  put_frame('D', NULL, 0);
  fflush(stdout);
}

static void do_voices(void) {
  const espeak_VOICE **voices = espeak_ListVoices(NULL);
  size_t cap = 1 << 16, len = 0;
  char *out = malloc(cap);
  if (!out) return;
  for (int i = 0; voices && voices[i]; i++) {
    const espeak_VOICE *v = voices[i];
    char line[1024];
    int k = snprintf(line, sizeof line, "%s\t%s\t", v->identifier ? v->identifier : "", v->name ? v->name : "");
    /* languages: repeated (priority byte, NUL-terminated name), ended by a zero priority byte */
    const char *l = v->languages;
    int first = 1;
    while (l && *l && k < (int)sizeof line - 64) {
      const char *name = l + 1;
      k += snprintf(line + k, sizeof line - k, "%s%s:%d", first ? "" : ",", name, (unsigned char)*l);
      first = 0;
      l = name + strlen(name) + 1;
    }
    k += snprintf(line + k, sizeof line - k, "\n");
    if (len + (size_t)k + 1 > cap) {
      cap *= 2;
      char *grown = realloc(out, cap);
      if (!grown) break;
      out = grown;
    }
    memcpy(out + len, line, (size_t)k);
    len += (size_t)k;
  }
  put_frame('V', out, (uint32_t)len);
  free(out);
  put_frame('D', NULL, 0);
  fflush(stdout);
}

int main(void) {
  int rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 200, NULL,
                               espeakINITIALIZE_PHONEME_EVENTS | espeakINITIALIZE_PHONEME_IPA | espeakINITIALIZE_DONT_EXIT);
  if (rate <= 0) {
    fprintf(stderr, "lectern-espeak: espeak_Initialize failed (is espeak-ng-data installed?)\n");
    return 2;
  }
  espeak_SetSynthCallback(on_synth);
  int32_t sr = rate;
  put_ints('I', &sr, 1);
  fflush(stdout);

  char line[1024];
  while (fgets(line, sizeof line, stdin)) {
    char cmd[32] = {0}, voice[256] = {0};
    int r = 0;
    size_t n = 0;
    if (sscanf(line, "%31s", cmd) != 1) continue;
    if (strcmp(cmd, "SYNTH") == 0 && sscanf(line, "%*s %255s %d %zu", voice, &r, &n) == 3) {
      char *text = read_body(n);
      if (!text) return 3;
      do_synth(voice, r, text, n);
      free(text);
    } else if (strcmp(cmd, "PHONEMIZE") == 0 && sscanf(line, "%*s %255s %zu", voice, &n) == 2) {
      char *text = read_body(n);
      if (!text) return 3;
      do_phonemize(voice, text, n);
      free(text);
    } else if (strcmp(cmd, "VOICES") == 0) {
      do_voices();
    } else {
      put_error("malformed request");
    }
  }
  espeak_Terminate();
  return 0;
}
