// A job as the API shows it (JobResponse): the record without its upload ids, with the
// download URL once it has an output.
import type { JobRecord } from '../jobs/types.ts';

export function jobResponse(job: JobRecord) {
  const { upload_ids: _u, ...rest } = job;
  const hasOutput = (job.status === 'completed' || job.status === 'stopped') && Boolean(job.config_json.result?.output);
  return { ...rest, download_url: hasOutput ? `/api/jobs/${job.id}/download` : null };
}
