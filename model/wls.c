/* Weighted linear least squares (include/pctl/wls.h). */
#include "pctl/wls.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void wls_add(double *ata, double *atb, unsigned n, const double *row, double y)
{
        for (unsigned i = 0; i < n; i++) {
                /* Most rows are sparse (one frequency of many); a zero adds nothing. */
                if (row[i] == 0)
                        continue;
                for (unsigned k = 0; k < n; k++)
                        ata[i * n + k] += row[i] * row[k];
                atb[i] += row[i] * y;
        }
}

void wls_scale(double *ata, double *atb, unsigned n, double weight)
{
        for (unsigned i = 0; i < n; i++) {
                for (unsigned k = 0; k < n; k++)
                        ata[i * n + k] *= weight;
                atb[i] *= weight;
        }
}

int wls_solve(const double *ata, const double *atb, unsigned n, unsigned ld, double ridge,
              double min_pivot, double *x)
{
        /* The augmented matrix [A + ridge | b], n rows of n + 1, and the solution. */
        double *a = malloc(((size_t)n * (n + 1) + n) * sizeof(double));
        double *sol, top = 0;
        unsigned w = n + 1;

        if (!a)
                return -ENOMEM;
        sol = a + (size_t)n * w;
        for (unsigned i = 0; i < n; i++)
                top = fmax(top, ata[i * ld + i]);
        if (!(top > 0)) {
                free(a);
                return -EDOM;
        }
        for (unsigned i = 0; i < n; i++) {
                memcpy(&a[i * w], &ata[i * ld], n * sizeof(double));
                a[i * w + i] += ridge * top;
                a[i * w + n] = atb[i];
        }
        for (unsigned col = 0; col < n; col++) {
                unsigned piv = col;

                for (unsigned r = col + 1; r < n; r++)
                        if (fabs(a[r * w + col]) > fabs(a[piv * w + col]))
                                piv = r;
                if (!(fabs(a[piv * w + col]) > min_pivot)) {
                        free(a);
                        return -EDOM;
                }
                if (piv != col)
                        for (unsigned j = 0; j <= n; j++) {
                                double t = a[col * w + j];

                                a[col * w + j] = a[piv * w + j];
                                a[piv * w + j] = t;
                        }
                for (unsigned r = col + 1; r < n; r++) {
                        double f = a[r * w + col] / a[col * w + col];

                        for (unsigned j = col; j <= n; j++)
                                a[r * w + j] -= f * a[col * w + j];
                }
        }
        for (unsigned i = n; i-- > 0;) {
                double v = a[i * w + n];

                for (unsigned j = i + 1; j < n; j++)
                        v -= a[i * w + j] * sol[j];
                sol[i] = v / a[i * w + i];
        }
        memcpy(x, sol, n * sizeof(double));
        free(a);
        return 0;
}
