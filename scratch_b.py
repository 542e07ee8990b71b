import numpy as np, nmfsc, warnings, time
warnings.simplefilter("ignore")
for name,(N,T,M,p) in {"CBCL":(361,2429,49,{"sparseness_w":0.8}),"natural":(288,10000,72,{"sparseness_h":0.85})}.items():
    rng=np.random.default_rng(0); V=np.abs(rng.standard_normal((N,T))); mask=rng.random((N,T))<0.7
    kw=dict(random_state=0,tol=0.0,solver="accelerated",**p)
    nmfsc.nmf_sc(V,M,max_iter=1,mask=mask,**kw)
    a=nmfsc.nmf_sc(V,M,max_iter=3,**kw); b=nmfsc.nmf_sc(V,M,max_iter=3,mask=mask,**kw)
    print(name, a.times[-1]/3, b.times[-1]/3)
