/* Weighted linear least squares over the normal equations, for the power fits (calibration's
 * offline one and the estimator's online one) and calibration's ΔI rate. The caller keeps
 * AᵀWA (n×n, row-major) and AᵀWy (n), adds one observation row at a time, may fade the old
 * ones, and solves. n is small (one unknown per coefficient), so elimination with partial
 * pivoting is enough. Pure: no I/O, no globals. */
#pragma once

/* Adds the observation y ≈ row·x: ata += row rowᵀ, atb += row y. */
void wls_add(double *ata, double *atb, unsigned n, const double *row, double y);
/* Multiplies every observation so far by weight (exponential forgetting). */
void wls_scale(double *ata, double *atb, unsigned n, double weight);
/* Solves (ata + ridge·max(diag ata)·I) x = atb for the first n unknowns of a system whose
 * rows are ld long (ld = n for the whole of it); ata and atb are left as they are. The ridge
 * (0 for none) keeps directions the data cannot tell apart finite instead of failing.
 * Returns 0; -EDOM when the matrix is empty or a pivot is not above min_pivot (x is then
 * unchanged); -ENOMEM. */
int wls_solve(const double *ata, const double *atb, unsigned n, unsigned ld, double ridge,
              double min_pivot, double *x);
