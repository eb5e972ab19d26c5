/** An error the API answers with its own status and a JSON body `{message, details?}`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly details?: unknown,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** 400 naming the offending field, so a client can point at it. */
export const badRequest = (field: string, message: string): ApiError =>
  new ApiError(400, `${field}: ${message}`, { field });

export const notFound = (message: string): ApiError => new ApiError(404, message);
