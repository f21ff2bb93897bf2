// A faster acoustic scorer for Debian's pocketsphinx_batch (libpocketsphinx3 0.8+5prealpha),
// which the long-recording recogniser runs (src/speech/align/long/recognize.ts): loaded with
// LD_PRELOAD, this library's ptm_mgau_frame_eval takes the place of the library's own (its
// PTM model's frame scorer is exported, and the model's function table points at it through a
// dynamic relocation, so the preloaded definition is the one bound).
//
// Why: about half of the locate phase's CPU is this function (perf on the bench hour), mostly
// the scan of every density of every active codebook (eval_cb), which stops a density as soon
// as its score falls under the n-th best, after an unpredictable number of its 13 dimensions,
// so the scalar loop is mostly mispredicted branches. Here eight densities are scored at once,
// one per vector lane (on x86-64 AVX2 where the CPU has it, two SSE halves otherwise), over all
// dimensions with no data-dependent branch, from a copy of the means and variances laid out a
// dimension of eight densities per load; each score is then offered to the n-best list in
// turn, as the scalar code offers it. Each lane does one density's single-precision operations
// on the same operands in the same order as the scalar code, and a density's score only falls
// as dimensions are added (each term is a square times a positive precision), so stopping early
// never changed which densities enter the list: the scores, the senone scores and so the
// recogniser's output are the library's, bit for bit (scripts/build-pocketsphinx-scorer.sh
// checks that on real speech before the build is used; compiled with -ffp-contract=off, so no
// fused multiply-add changes a rounding). The rest follows the library's algorithm step for step.
//
// The structures below are libpocketsphinx 5prealpha's (ptm_mgau.h, ms_gauden.h, acmod.h,
// sphinxbase's logmath.h and bitvec.h); the build script checks the library's sha256, and the
// recogniser preloads this only for the library it was verified against.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct { void *vt; int frame_idx; } ps_mgau_t;
typedef struct { int32_t cw; int32_t score; } ptm_topn_t;
typedef struct { ptm_topn_t ***topn; uint32_t *mgau_active; } ptm_fast_eval_t;
typedef struct {
  float ****mean;
  float ****var;
  float ***det;
  void *lmath;
  int32_t n_mgau, n_feat, n_density;
  int32_t *featlen;
} gauden_t;
typedef struct {
  ps_mgau_t base;
  void *config;
  gauden_t *g;
  int32_t n_sen;
  uint8_t *sen2cb;
  uint8_t ***mixw;
  void *sendump_mmap;
  uint8_t *mixw_cb;
  int16_t max_topn;
  int16_t ds_ratio;
  ptm_fast_eval_t *hist;
  ptm_fast_eval_t *f;
  int n_fast_hist;
  void **lmath_8b; /* logmath_t, whose first member is its log-add table */
  void *lmath;
} ptm_mgau_t;

#define WORST_SCORE ((int)0xE0000000)
#define SENSCR_SHIFT 10
#define MAX_NEG_ASCR 96
#define IS_ACTIVE(v, b) ((v)[(b) / 32] & (1UL << ((b) & 31)))

static inline int log_add(const uint8_t *table, int x, int y) {
  return x > y ? y - table[x - y] : x - table[y - x];
}

/** The n-best list's insertion, as the library's eval_topn does it (a score replaces slot i, then sinks). */
static void topn_resort(ptm_topn_t *topn, int i, int32_t d) {
  topn[i].score = d;
  if (i == 0) return;
  ptm_topn_t moved = topn[i];
  int j;
  for (j = i - 1; j >= 0 && d > topn[j].score; j--) topn[j + 1] = topn[j];
  topn[j + 1] = moved;
}

/** One density's full score, scalar, dimensions in order (the remainder of a codebook, and eval_topn). */
static float density_score(const float *mean, const float *var, float det, const float *z, int len) {
  float d = det;
  for (int j = 0; j < len; j++) {
    float diff = z[j] - mean[j];
    float sq = diff * diff;
    d = d - sq * var[j];
  }
  return d;
}

static void eval_topn(ptm_mgau_t *s, int cb, int feat, const float *z) {
  ptm_topn_t *topn = s->f->topn[cb][feat];
  int len = s->g->featlen[feat];
  for (int i = 0; i < s->max_topn; i++) {
    int cw = topn[i].cw;
    float d = density_score(s->g->mean[cb][feat][0] + cw * len, s->g->var[cb][feat][0] + cw * len, s->g->det[cb][feat][cw], z, len);
    topn_resort(topn, i, (int32_t)d);
  }
}

/** A density's full score offered to the n-best list, as eval_cb offers one that did not stop early. */
static void offer(ptm_mgau_t *s, ptm_topn_t *topn, int cw, float d) {
  ptm_topn_t *best = topn, *worst = topn + (s->max_topn - 1);
  if (d < (float)worst->score) return;
  for (int i = 0; i < s->max_topn; i++)
    if (topn[i].cw == cw) return;
  int32_t intd = (int32_t)d;
  ptm_topn_t *cur;
  for (cur = worst - 1; cur >= best && intd >= cur->score; --cur) memcpy(cur + 1, cur, sizeof *cur);
  ++cur;
  cur->cw = cw;
  cur->score = intd;
}

/**
 * The model's means and variances in groups of LANES densities, each dimension's LANES values
 * side by side ([cb][feat][group][dim][lane]), so that one load holds a dimension of every
 * density of a group. Made on the first frame from the loaded model (about 2 MB for en-us;
 * pocketsphinx_batch loads one model and never transforms it: no MLLR here).
 */
#define LANES 8
typedef float vNf __attribute__((vector_size(4 * LANES)));
typedef int32_t vNi __attribute__((vector_size(4 * LANES)));
static struct { const gauden_t *g; const float *mean0; vNf *mean, *var; size_t *at; } columns;

static int make_columns(const gauden_t *g) {
  if (columns.g == g && columns.mean0 == g->mean[0][0][0]) return 1;
  free(columns.mean), free(columns.var), free(columns.at);
  columns.g = NULL;
  const int groups = g->n_density / LANES;
  size_t total = 0;
  for (int j = 0; j < g->n_feat; j++) total += (size_t)groups * g->featlen[j];
  total *= g->n_mgau;
  columns.mean = aligned_alloc(sizeof(vNf), total * sizeof(vNf));
  columns.var = aligned_alloc(sizeof(vNf), total * sizeof(vNf));
  columns.at = malloc((size_t)g->n_mgau * g->n_feat * sizeof(size_t));
  if (!columns.mean || !columns.var || !columns.at) return 0;
  size_t at = 0;
  for (int cb = 0; cb < g->n_mgau; cb++)
    for (int j = 0; j < g->n_feat; j++) {
      const int len = g->featlen[j];
      columns.at[cb * g->n_feat + j] = at;
      for (int q = 0; q < groups; q++)
        for (int k = 0; k < len; k++, at++)
          for (int l = 0; l < LANES; l++) {
            columns.mean[at][l] = g->mean[cb][j][0][(q * LANES + l) * len + k];
            columns.var[at][l] = g->var[cb][j][0][(q * LANES + l) * len + k];
          }
    }
  columns.g = g;
  columns.mean0 = g->mean[0][0][0];
  return 1;
}

/** A group's scores offered in lane order; the usual case, every lane under the n-th best, offers none. */
static inline void offer_lanes(ptm_mgau_t *s, ptm_topn_t *topn, int cw, const vNf *d) {
  float thresh = (float)topn[s->max_topn - 1].score;
  // the group's best, by halving: one compare decides the usual case
  vNf m = *d;
  for (int w = LANES / 2; w >= 1; w /= 2) {
    vNf h;
    for (int l = 0; l < LANES; l++) h[l] = m[(l + w) % LANES];
    const vNi gt = m > h;
    m = (vNf)(((vNi)m & gt) | ((vNi)h & ~gt));
  }
  if (m[0] < thresh) return;
  float lanes[LANES];
  memcpy(lanes, d, sizeof lanes);
  for (int l = 0; l < LANES; l++) {
    if (lanes[l] < thresh) continue;
    offer(s, topn, cw + l, lanes[l]);
    thresh = (float)topn[s->max_topn - 1].score;
  }
}

// x86-64: an AVX2 clone beside the baseline one, picked at load time by the CPU
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static void eval_cb(ptm_mgau_t *s, int cb, int feat, const float *z) {
  ptm_topn_t *topn = s->f->topn[cb][feat];
  const float *mean = s->g->mean[cb][feat][0], *var = s->g->var[cb][feat][0], *det = s->g->det[cb][feat];
  const int n = s->g->n_density, len = s->g->featlen[feat];
  const vNf *mc = columns.mean + columns.at[cb * s->g->n_feat + feat], *vc = columns.var + columns.at[cb * s->g->n_feat + feat];
  int cw = 0;
  // two groups at a time: each lane's sum is a chain of dependent subtractions, and two chains
  // keep the vector units busy while the other waits
  for (; cw + 2 * LANES <= n; cw += 2 * LANES, mc += 2 * len, vc += 2 * len) {
    vNf d0, d1;
    memcpy(&d0, det + cw, sizeof d0);
    memcpy(&d1, det + cw + LANES, sizeof d1);
    for (int k = 0; k < len; k++) {
      const vNf x0 = z[k] - mc[k], x1 = z[k] - mc[len + k];
      d0 = d0 - x0 * x0 * vc[k];
      d1 = d1 - x1 * x1 * vc[len + k];
    }
    offer_lanes(s, topn, cw, &d0);
    offer_lanes(s, topn, cw + LANES, &d1);
  }
  for (; cw + LANES <= n; cw += LANES, mc += len, vc += len) {
    vNf d;
    memcpy(&d, det + cw, sizeof d);
    for (int k = 0; k < len; k++) {
      const vNf x = z[k] - mc[k];
      d = d - x * x * vc[k];
    }
    offer_lanes(s, topn, cw, &d);
  }
  for (; cw < n; cw++) offer(s, topn, cw, density_score(mean + cw * len, var + cw * len, det[cw], z, len));
}

static void codebook_eval(ptm_mgau_t *s, float **z, int frame) {
  const gauden_t *g = s->g;
  for (int i = 0; i < g->n_mgau; ++i)
    for (int j = 0; j < g->n_feat; ++j) eval_topn(s, i, j, z[j]);
  // with frame downsampling, the other densities only every ds_ratio-th frame
  if (frame % s->ds_ratio) return;
  for (int i = 0; i < g->n_mgau; ++i) {
    if (!IS_ACTIVE(s->f->mgau_active, i)) continue;
    for (int j = 0; j < g->n_feat; ++j) eval_cb(s, i, j, z[j]);
  }
}

static void codebook_norm(ptm_mgau_t *s) {
  const gauden_t *g = s->g;
  for (int j = 0; j < g->n_feat; ++j) {
    int32_t norm = WORST_SCORE;
    for (int i = 0; i < g->n_mgau; ++i) {
      if (!IS_ACTIVE(s->f->mgau_active, i)) continue;
      if (norm < s->f->topn[i][j][0].score >> SENSCR_SHIFT) norm = s->f->topn[i][j][0].score >> SENSCR_SHIFT;
    }
    for (int i = 0; i < g->n_mgau; ++i) {
      if (!IS_ACTIVE(s->f->mgau_active, i)) continue;
      for (int k = 0; k < s->max_topn; ++k) {
        ptm_topn_t *t = &s->f->topn[i][j][k];
        t->score >>= SENSCR_SHIFT;
        t->score -= norm;
        t->score = -t->score;
        if (t->score > MAX_NEG_ASCR) t->score = MAX_NEG_ASCR;
      }
    }
  }
}

static void calc_cb_active(ptm_mgau_t *s, const uint8_t *senone_active, int32_t n_senone_active, int compallsen) {
  const size_t words = (s->g->n_mgau + 31) / 32;
  if (compallsen) {
    memset(s->f->mgau_active, 0xff, words * sizeof(uint32_t));
    return;
  }
  memset(s->f->mgau_active, 0, words * sizeof(uint32_t));
  for (int i = 0, lastsen = 0; i < n_senone_active; ++i) {
    int sen = senone_active[i] + lastsen;
    int cb = s->sen2cb[sen];
    s->f->mgau_active[cb / 32] |= 1UL << (cb & 31);
    lastsen = sen;
  }
}

static void senone_eval(ptm_mgau_t *s, int16_t *senone_scores, const uint8_t *senone_active, int32_t n_senone_active, int compall) {
  const uint8_t *table = (const uint8_t *)*s->lmath_8b;
  memset(senone_scores, 0, s->n_sen * sizeof *senone_scores);
  if (compall) n_senone_active = s->n_sen;
  int bestscore = 0x7fffffff;
  for (int i = 0, lastsen = 0; i < n_senone_active; ++i) {
    int sen = compall ? i : senone_active[i] + lastsen;
    lastsen = sen;
    int cb = s->sen2cb[sen];
    if (!IS_ACTIVE(s->f->mgau_active, cb)) {
      for (int f = 0; f < s->g->n_feat; ++f)
        for (int j = 0; j < s->max_topn; ++j) s->f->topn[cb][f][j].score = MAX_NEG_ASCR;
    }
    int ascore = 0;
    for (int f = 0; f < s->g->n_feat; ++f) {
      const ptm_topn_t *topn = s->f->topn[cb][f];
      int fden = 0;
      for (int j = 0; j < s->max_topn; ++j) {
        int mixw;
        if (s->mixw_cb) {
          int dcw = s->mixw[f][topn[j].cw][sen / 2];
          dcw = (dcw & 1) ? dcw >> 4 : dcw & 0x0f;
          mixw = s->mixw_cb[dcw];
        } else {
          mixw = s->mixw[f][topn[j].cw][sen];
        }
        fden = j == 0 ? mixw + topn[j].score : log_add(table, fden, mixw + topn[j].score);
      }
      ascore += fden;
    }
    if (ascore < bestscore) bestscore = ascore;
    senone_scores[sen] = ascore;
  }
  for (int i = 0; i < s->n_sen; ++i) senone_scores[i] -= bestscore;
}

int ptm_mgau_frame_eval(ps_mgau_t *ps, int16_t *senone_scores, uint8_t *senone_active, int32_t n_senone_active, float **featbuf, int32_t frame, int32_t compallsen) {
  ptm_mgau_t *s = (ptm_mgau_t *)ps;
  const int idx = frame % s->n_fast_hist;
  s->f = s->hist + idx;
  // a past frame (the search looking back) keeps the n-best lists it had
  if (frame >= ps->frame_idx) {
    if (!make_columns(s->g)) abort(); /* out of memory for 2 MB: nothing sensible to go on with */
    const ptm_fast_eval_t *lastf = s->hist + (idx == 0 ? s->n_fast_hist - 1 : idx - 1);
    memcpy(s->f->topn[0][0], lastf->topn[0][0], (size_t)s->g->n_mgau * s->g->n_feat * s->max_topn * sizeof(ptm_topn_t));
    calc_cb_active(s, senone_active, n_senone_active, compallsen);
    codebook_eval(s, featbuf, frame);
    codebook_norm(s);
  }
  senone_eval(s, senone_scores, senone_active, n_senone_active, compallsen);
  return 0;
}
