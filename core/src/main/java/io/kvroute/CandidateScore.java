package io.kvroute;

/**
 * One candidate's view in a routing decision, for explanations; an immutable value, thread-safe.
 *
 * @param worker the candidate
 * @param overlapBlocks consecutive prompt blocks it held, any tier
 * @param gpuOverlapBlocks consecutive prompt blocks it held on the GPU
 * @param prefillTokens pending prompt tokens booked on it before this request
 * @param decodeBlocks blocks it would hold with this request added
 * @param activeRequests requests booked on it before this request
 * @param cost the policy's score (NaN if the policy gives none); for cost-based policies lower is better
 * @param chosen whether it was chosen
 * @param health its health; workers that were not candidates because of it are listed last, with NaN cost
 * @param approximate whether its overlap came from the router's own predictions rather than KV events (the
 *     approximate policy, or a worker whose event stream is silent, broken or has delivered nothing yet)
 */
public record CandidateScore(
    WorkerId worker,
    int overlapBlocks,
    int gpuOverlapBlocks,
    long prefillTokens,
    long decodeBlocks,
    int activeRequests,
    double cost,
    boolean chosen,
    HealthState health,
    boolean approximate) {}
