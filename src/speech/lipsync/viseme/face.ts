// Face detection (UltraFace RFB-320) and 468-point Face Mesh landmarks on onnxruntime, with
// tracking: once a face is found, the next frame's crop comes from the previous landmarks
// (as MediaPipe does) and the detector runs again only when the mesh loses the face.
import fs from 'node:fs';
import path from 'node:path';
import ort from 'onnxruntime-node';
import { MissingModelError } from '../../types.ts';

export const FACE_MODEL_FILES = {
  detector: 'face/ultraface-version-RFB-320.onnx',
  mesh: 'face/facemesh_face_landmark_barracuda.onnx',
} as const;

export interface Frame {
  data: Uint8Array; // RGBA
  width: number;
  height: number;
}

export interface Box {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
  score: number;
}

/** 468 points, x/y in frame pixels (z dropped). */
export type Landmarks = Float32Array;

const DET_W = 320;
const DET_H = 240;
const MESH = 192;
/** Detector box → mesh crop side; UltraFace boxes run brow to chin, the mesh wants margin. */
const DET_CROP_SCALE = 1.45;
/** Landmark bounding box → next frame's crop side. */
const TRACK_CROP_SCALE = 1.5;
const FACE_FLAG_MIN = 0.5;

export function faceModelPaths(modelsDir: string): { detector: string; mesh: string } {
  return { detector: path.join(modelsDir, FACE_MODEL_FILES.detector), mesh: path.join(modelsDir, FACE_MODEL_FILES.mesh) };
}

/** Throws MissingModelError naming the first face model file that is not there. */
export function checkFaceModels(modelsDir: string): void {
  for (const f of Object.values(faceModelPaths(modelsDir))) {
    if (!fs.existsSync(f)) throw new MissingModelError(`face model ${f} is missing; copy it from ../shared/models/face (see models/manifest.json)`);
  }
}

/** Bilinear RGB sample of an axis-aligned square of the frame into a planar float tensor. */
function cropToTensor(f: Frame, cx: number, cy: number, side: number, outW: number, outH: number, norm: (v: number) => number, sideY = side): Float32Array {
  const out = new Float32Array(3 * outW * outH);
  const plane = outW * outH;
  const sx = side / outW, sy = sideY / outH;
  const x0 = cx - side / 2, y0 = cy - sideY / 2;
  const { data, width: W, height: H } = f;
  for (let j = 0; j < outH; j++) {
    let fy = y0 + (j + 0.5) * sy - 0.5;
    fy = fy < 0 ? 0 : fy > H - 1 ? H - 1 : fy;
    const iy = Math.min(H - 2, Math.floor(fy));
    const ty = fy - iy;
    for (let i = 0; i < outW; i++) {
      let fx = x0 + (i + 0.5) * sx - 0.5;
      fx = fx < 0 ? 0 : fx > W - 1 ? W - 1 : fx;
      const ix = Math.min(W - 2, Math.floor(fx));
      const tx = fx - ix;
      const p00 = (iy * W + ix) * 4, p01 = p00 + 4, p10 = p00 + W * 4, p11 = p10 + 4;
      const o = j * outW + i;
      for (let c = 0; c < 3; c++) {
        const top = data[p00 + c]! + (data[p01 + c]! - data[p00 + c]!) * tx;
        const bot = data[p10 + c]! + (data[p11 + c]! - data[p10 + c]!) * tx;
        out[c * plane + o] = norm(top + (bot - top) * ty);
      }
    }
  }
  return out;
}

export class FaceTracker {
  private last: Landmarks | null = null;

  private constructor(
    private readonly detector: ort.InferenceSession,
    private readonly mesh: ort.InferenceSession,
  ) {}

  static async create(modelsDir: string, threads = 1): Promise<FaceTracker> {
    checkFaceModels(modelsDir);
    const p = faceModelPaths(modelsDir);
    const opts: ort.InferenceSession.SessionOptions = { intraOpNumThreads: threads, interOpNumThreads: 1, logSeverityLevel: 3, executionMode: 'sequential' };
    const [d, m] = await Promise.all([ort.InferenceSession.create(p.detector, opts), ort.InferenceSession.create(p.mesh, opts)]);
    return new FaceTracker(d, m);
  }

  async release(): Promise<void> {
    await Promise.all([this.detector.release(), this.mesh.release()]);
  }

  /** Forget the tracked face (e.g. at a cut in the video). */
  reset(): void {
    this.last = null;
  }

  /** Best face box of the frame, or null. */
  async detect(f: Frame): Promise<Box | null> {
    const input = cropToTensor(f, f.width / 2, f.height / 2, f.width, DET_W, DET_H, (v) => (v - 127) / 128, f.height);
    const out = await this.detector.run({ input: new ort.Tensor('float32', input, [1, 3, DET_H, DET_W]) });
    const scores = out.scores!.data as Float32Array;
    const boxes = out.boxes!.data as Float32Array;
    let best = -1, bestScore = 0.7;
    for (let i = 0; i < scores.length / 2; i++) {
      const s = scores[i * 2 + 1]!;
      if (s > bestScore) {
        bestScore = s;
        best = i;
      }
    }
    if (best < 0) return null;
    return {
      x0: boxes[best * 4]! * f.width,
      y0: boxes[best * 4 + 1]! * f.height,
      x1: boxes[best * 4 + 2]! * f.width,
      y1: boxes[best * 4 + 3]! * f.height,
      score: bestScore,
    };
  }

  /** Face Mesh on a square crop; landmarks in frame pixels and the face-present probability. */
  async meshAt(f: Frame, cx: number, cy: number, side: number): Promise<{ points: Landmarks; flag: number }> {
    const input = cropToTensor(f, cx, cy, side, MESH, MESH, (v) => v / 255);
    const out = await this.mesh.run({ input_1: new ort.Tensor('float32', input, [1, 3, MESH, MESH]) });
    const raw = out.conv2d_20!.data as Float32Array;
    const logit = (out.conv2d_30!.data as Float32Array)[0]!;
    const points = new Float32Array(468 * 2);
    const k = side / MESH, x0 = cx - side / 2, y0 = cy - side / 2;
    for (let i = 0; i < 468; i++) {
      points[i * 2] = x0 + raw[i * 3]! * k;
      points[i * 2 + 1] = y0 + raw[i * 3 + 1]! * k;
    }
    return { points, flag: 1 / (1 + Math.exp(-logit)) };
  }

  /** Landmarks of the face in this frame (tracked from the previous one when possible), or null. */
  async landmarks(f: Frame): Promise<Landmarks | null> {
    if (this.last) {
      const r = cropFromLandmarks(this.last);
      const m = await this.meshAt(f, r.cx, r.cy, r.side);
      if (m.flag >= FACE_FLAG_MIN) {
        this.last = m.points;
        return m.points;
      }
    }
    const box = await this.detect(f);
    if (!box) {
      this.last = null;
      return null;
    }
    const side = Math.max(box.x1 - box.x0, box.y1 - box.y0) * DET_CROP_SCALE;
    let m = await this.meshAt(f, (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2, side);
    if (m.flag < FACE_FLAG_MIN) {
      this.last = null;
      return null;
    }
    // One refinement pass from the mesh's own box centres the crop like the tracking path.
    const r = cropFromLandmarks(m.points);
    const m2 = await this.meshAt(f, r.cx, r.cy, r.side);
    if (m2.flag >= FACE_FLAG_MIN) m = m2;
    this.last = m.points;
    return m.points;
  }
}

export function cropFromLandmarks(p: Landmarks): { cx: number; cy: number; side: number } {
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (let i = 0; i < p.length; i += 2) {
    const x = p[i]!, y = p[i + 1]!;
    if (x < x0) x0 = x;
    if (x > x1) x1 = x;
    if (y < y0) y0 = y;
    if (y > y1) y1 = y;
  }
  return { cx: (x0 + x1) / 2, cy: (y0 + y1) / 2, side: Math.max(x1 - x0, y1 - y0) * TRACK_CROP_SCALE };
}
